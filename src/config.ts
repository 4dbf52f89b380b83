import { isIP } from 'node:net'
import path from 'node:path'
import { type Static, Type } from 'typebox'
import { Value } from 'typebox/value'

const Roles = Type.Union([Type.Literal('all'), Type.Literal('api'), Type.Literal('worker')])

const ConfigSchema = Type.Object({
  port: Type.Integer({ minimum: 0, maximum: 65535 }),
  host: Type.String({ minLength: 1 }),
  dataDir: Type.String({ minLength: 1 }),
  databaseUrl: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  redisUrl: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  role: Roles,
  publicUrl: Type.String({ pattern: '^https?://' }),
  serviceName: Type.String({ minLength: 1, maxLength: 60 }),
  allowPrivateTargets: Type.Boolean(),
  /**
   * development and tests only: an OAuth client_id may be a client ID metadata document at http://127.0.0.1:<port>/...
   * (otherwise only https addresses; never set it in production)
   */
  devOAuthClientMetadataOverHttpLoopback: Type.Boolean(),
  /** object storage for media instead of the data directory: s3://bucket?endpoint=...&region=...&path_style=true */
  storageUrl: Type.Optional(Type.String({ pattern: '^s3://[^/?]+' })),
  /** 32 bytes, base64 or hex: encrypts secrets kept at rest (webhook signing secrets) */
  secretKey: Type.Optional(Type.String({ minLength: 1 })),
  /** the WhatsApp Cloud API's Graph base address, version included (tests point it at a fake on loopback) */
  whatsappGraphUrl: Type.String({ pattern: '^https?://' }),
  /**
   * background jobs one worker process runs at once; the send pipeline takes batches of half of it, and a number
   * paced at 1,000 messages a second needs about 256 sends in flight (docs/sending.md)
   */
  workerConcurrency: Type.Integer({ minimum: 1, maximum: 1000 }),
  /**
   * the burst a chat number may send at once after an idle spell, in milliseconds of its pace (0, the default: none,
   * no 1-second window over the pace; 250 at 80/s lets 20 messages go at once on top of the second's own)
   */
  paceBurstMs: Type.Integer({ minimum: 0, maximum: 1000 }),
  /** PostgreSQL connections one process keeps at most (the embedded database has one) */
  databasePoolSize: Type.Integer({ minimum: 1, maximum: 500 }),
  /** how long a claimed job stays with its worker without a heartbeat before another worker takes it */
  jobLeaseSeconds: Type.Integer({ minimum: 1, maximum: 3600 }),
  /** days finished records are kept: dead jobs, webhook deliveries and attempts, expired tokens */
  retentionDays: Type.Integer({ minimum: 1, maximum: 3650 }),
  /** days the sandbox's outbox (its record of what it "sent") is kept */
  sandboxRetentionDays: Type.Integer({ minimum: 1, maximum: 3650 }),
  /** an OpenAI-compatible chat-completions endpoint for the built-in AI (replies, tags); none: the AI is off */
  aiUrl: Type.Optional(Type.String({ pattern: '^https?://' })),
  /** its API key (sent as a bearer token; local servers may need none) */
  aiKey: Type.Optional(Type.String({ minLength: 1 })),
  /** the model to ask */
  aiModel: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  /** how long one call to the AI endpoint may take before it counts as failed */
  aiTimeoutMs: Type.Integer({ minimum: 100, maximum: 600_000 }),
  /** the server's SMTP settings for the web app's e-mails (invitations, password resets) */
  smtpUrl: Type.Optional(Type.String({ pattern: '^smtps?://' })),
  mailFrom: Type.String({ minLength: 3 }),
  /** a bearer token for GET /metrics; without it /metrics answers only on loopback (docs/operations.md#metrics) */
  metricsToken: Type.Optional(Type.String({ minLength: 16 })),
  /** a second port serving only GET /metrics (a worker process without HTTP exposes its metrics there) */
  metricsPort: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
  /** an account_id label on the per-account counters (labels per account grow without bound) */
  metricsPerAccount: Type.Boolean(),
  /**
   * which proxies' X-Forwarded-For (and -Proto, -Host) to believe, Fastify's trustProxy: false (none, the default),
   * true (any), a hop count, or addresses and CIDR ranges; request.ip is the client's address by it (/metrics' loopback
   * rule, the sign-in limits per address)
   */
  trustProxy: Type.Union([Type.Boolean(), Type.Integer({ minimum: 1, maximum: 100 }), Type.Array(Type.String())]),
  /** OTLP/HTTP endpoint for traces (OpenTelemetry's own variable); none: no tracing code is loaded */
  otlpEndpoint: Type.Optional(Type.String({ pattern: '^https?://' })),
  logLevel: Type.Union([
    Type.Literal('fatal'),
    Type.Literal('error'),
    Type.Literal('warn'),
    Type.Literal('info'),
    Type.Literal('debug'),
    Type.Literal('trace'),
    Type.Literal('silent'),
  ]),
})

export type Config = Static<typeof ConfigSchema>
export type Role = Static<typeof Roles>

export class ConfigError extends Error {}

const variableOf: Record<string, string> = {
  port: 'PORT',
  host: 'HOST',
  dataDir: 'HEROLD_DATA_DIR',
  databaseUrl: 'DATABASE_URL',
  redisUrl: 'REDIS_URL',
  role: 'HEROLD_ROLE',
  publicUrl: 'HEROLD_PUBLIC_URL',
  serviceName: 'HEROLD_SERVICE_NAME',
  allowPrivateTargets: 'HEROLD_ALLOW_PRIVATE_TARGETS',
  devOAuthClientMetadataOverHttpLoopback: 'HEROLD_DEV_OAUTH_CLIENT_METADATA_HTTP_LOOPBACK',
  storageUrl: 'HEROLD_STORAGE_URL',
  secretKey: 'HEROLD_SECRET_KEY',
  whatsappGraphUrl: 'HEROLD_WHATSAPP_GRAPH_URL',
  workerConcurrency: 'HEROLD_WORKER_CONCURRENCY',
  paceBurstMs: 'HEROLD_PACE_BURST_MS',
  databasePoolSize: 'HEROLD_DATABASE_POOL_SIZE',
  jobLeaseSeconds: 'HEROLD_JOB_LEASE_SECONDS',
  retentionDays: 'HEROLD_RETENTION_DAYS',
  sandboxRetentionDays: 'HEROLD_SANDBOX_RETENTION_DAYS',
  aiUrl: 'HEROLD_AI_URL',
  aiKey: 'HEROLD_AI_KEY',
  aiModel: 'HEROLD_AI_MODEL',
  aiTimeoutMs: 'HEROLD_AI_TIMEOUT_MS',
  smtpUrl: 'HEROLD_SMTP_URL',
  mailFrom: 'HEROLD_MAIL_FROM',
  metricsToken: 'HEROLD_METRICS_TOKEN',
  metricsPort: 'HEROLD_METRICS_PORT',
  metricsPerAccount: 'HEROLD_METRICS_PER_ACCOUNT',
  trustProxy: 'HEROLD_TRUST_PROXY',
  otlpEndpoint: 'OTEL_EXPORTER_OTLP_ENDPOINT',
  logLevel: 'LOG_LEVEL',
}

function parseBoolean(name: string, raw: string | undefined): boolean {
  if (raw === undefined || raw === '') return false
  if (raw === 'true' || raw === '1') return true
  if (raw === 'false' || raw === '0') return false
  throw new ConfigError(`${name} must be true or false, got "${raw}"`)
}

function parseInteger(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`)
  return Number(raw)
}

/** HEROLD_SECRET_KEY: 32 bytes as base64 (44 characters) or hex (64 characters). */
export function decodeSecretKey(raw: string): Buffer {
  const key = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64')
  if (key.length !== 32 || (!/^[0-9a-fA-F]{64}$/.test(raw) && key.toString('base64') !== raw)) {
    throw new ConfigError(
      'HEROLD_SECRET_KEY must be 32 bytes as base64 or hex; generate one with: openssl rand -base64 32',
    )
  }
  return key
}

/** proxy-addr's names for ranges, beside addresses and CIDRs */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal'])

/** HEROLD_TRUST_PROXY: false (default), true, a hop count, or comma-separated addresses, CIDRs and range names. */
export function parseTrustProxy(raw: string | undefined): boolean | number | string[] {
  const value = raw?.trim() ?? ''
  if (value === '' || value === 'false' || value === '0') return false
  if (value === 'true') return true
  if (/^\d+$/.test(value)) {
    const hops = Number(value)
    if (hops > 100) throw new ConfigError(`HEROLD_TRUST_PROXY must be at most 100 hops, got "${raw}"`)
    return hops
  }
  const entries = value.split(',').map((entry) => entry.trim())
  for (const entry of entries) {
    const [address = '', bits, ...rest] = entry.split('/')
    const family = isIP(address)
    const bitsOk =
      bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 6 ? 128 : 32)) || isIP(bits) === 4
    if (!PROXY_RANGE_NAMES.has(entry) && (family === 0 || !bitsOk || rest.length > 0)) {
      throw new ConfigError(
        `HEROLD_TRUST_PROXY must be true, false, a hop count or comma-separated addresses and CIDR ranges (10.0.0.0/8, loopback), got "${entry}"`,
      )
    }
  }
  return entries
}

function parsePort(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 3000
  if (!/^\d+$/.test(raw)) throw new ConfigError(`PORT must be a number between 0 and 65535, got "${raw}"`)
  return Number(raw)
}

/** Reads the environment once; throws a ConfigError naming the bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const port = overrides.port ?? parsePort(env.PORT)
  const host = overrides.host ?? (env.HOST || '127.0.0.1')
  const candidate = {
    port,
    host,
    dataDir: path.resolve(overrides.dataDir ?? (env.HEROLD_DATA_DIR || './data')),
    databaseUrl: overrides.databaseUrl ?? (env.DATABASE_URL || undefined),
    redisUrl: overrides.redisUrl ?? (env.REDIS_URL || undefined),
    role: overrides.role ?? (env.HEROLD_ROLE || 'all'),
    publicUrl: (overrides.publicUrl ?? (env.HEROLD_PUBLIC_URL || `http://${host}:${port}`)).replace(/\/+$/, ''),
    serviceName: overrides.serviceName ?? (env.HEROLD_SERVICE_NAME || 'herold'),
    allowPrivateTargets:
      overrides.allowPrivateTargets ?? parseBoolean('HEROLD_ALLOW_PRIVATE_TARGETS', env.HEROLD_ALLOW_PRIVATE_TARGETS),
    devOAuthClientMetadataOverHttpLoopback:
      overrides.devOAuthClientMetadataOverHttpLoopback ??
      parseBoolean(
        'HEROLD_DEV_OAUTH_CLIENT_METADATA_HTTP_LOOPBACK',
        env.HEROLD_DEV_OAUTH_CLIENT_METADATA_HTTP_LOOPBACK,
      ),
    secretKey: overrides.secretKey ?? (env.HEROLD_SECRET_KEY || undefined),
    storageUrl: overrides.storageUrl ?? (env.HEROLD_STORAGE_URL || undefined),
    whatsappGraphUrl: (
      overrides.whatsappGraphUrl ??
      (env.HEROLD_WHATSAPP_GRAPH_URL || 'https://graph.facebook.com/v21.0')
    ).replace(/\/+$/, ''),
    workerConcurrency:
      overrides.workerConcurrency ?? parseInteger('HEROLD_WORKER_CONCURRENCY', env.HEROLD_WORKER_CONCURRENCY, 256),
    paceBurstMs: overrides.paceBurstMs ?? parseInteger('HEROLD_PACE_BURST_MS', env.HEROLD_PACE_BURST_MS, 0),
    databasePoolSize:
      overrides.databasePoolSize ?? parseInteger('HEROLD_DATABASE_POOL_SIZE', env.HEROLD_DATABASE_POOL_SIZE, 20),
    jobLeaseSeconds:
      overrides.jobLeaseSeconds ?? parseInteger('HEROLD_JOB_LEASE_SECONDS', env.HEROLD_JOB_LEASE_SECONDS, 30),
    retentionDays: overrides.retentionDays ?? parseInteger('HEROLD_RETENTION_DAYS', env.HEROLD_RETENTION_DAYS, 30),
    sandboxRetentionDays:
      overrides.sandboxRetentionDays ??
      parseInteger('HEROLD_SANDBOX_RETENTION_DAYS', env.HEROLD_SANDBOX_RETENTION_DAYS, 7),
    aiUrl: (overrides.aiUrl ?? (env.HEROLD_AI_URL || undefined))?.replace(/\/+$/, ''),
    aiKey: overrides.aiKey ?? (env.HEROLD_AI_KEY || undefined),
    aiModel: overrides.aiModel ?? (env.HEROLD_AI_MODEL || undefined),
    aiTimeoutMs: overrides.aiTimeoutMs ?? parseInteger('HEROLD_AI_TIMEOUT_MS', env.HEROLD_AI_TIMEOUT_MS, 60_000),
    smtpUrl: overrides.smtpUrl ?? (env.HEROLD_SMTP_URL || undefined),
    mailFrom: overrides.mailFrom ?? (env.HEROLD_MAIL_FROM || 'Herold <herold@localhost>'),
    metricsToken: overrides.metricsToken ?? (env.HEROLD_METRICS_TOKEN || undefined),
    metricsPort:
      overrides.metricsPort ??
      (env.HEROLD_METRICS_PORT ? parseInteger('HEROLD_METRICS_PORT', env.HEROLD_METRICS_PORT, 0) : undefined),
    metricsPerAccount:
      overrides.metricsPerAccount ?? parseBoolean('HEROLD_METRICS_PER_ACCOUNT', env.HEROLD_METRICS_PER_ACCOUNT),
    trustProxy: overrides.trustProxy ?? parseTrustProxy(env.HEROLD_TRUST_PROXY),
    otlpEndpoint: (overrides.otlpEndpoint ?? (env.OTEL_EXPORTER_OTLP_ENDPOINT || undefined))?.replace(/\/+$/, ''),
    logLevel: overrides.logLevel ?? (env.LOG_LEVEL || 'info'),
  }
  if (candidate.secretKey !== undefined) decodeSecretKey(candidate.secretKey)
  const [error] = Value.Errors(ConfigSchema, candidate)
  if (error) {
    const field = error.instancePath.replace(/^\//, '') || String(error.params && Object.values(error.params)[0])
    const variable = variableOf[field] ?? field
    throw new ConfigError(`${variable} is invalid: ${error.message} (got "${String(Reflect.get(candidate, field))}")`)
  }
  return candidate as Config
}
