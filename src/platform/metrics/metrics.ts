import client from 'prom-client'

/**
 * The process's Prometheus metrics (GET /metrics, docs/operations.md#metrics). Counters are incremented where an
 * outcome is decided, in memory, no statement; the gauges (job queues, the database pool) are read when scraped.
 * Labels never carry personal data (no names, keys, phone numbers or e-mail addresses); an account id only with
 * HEROLD_METRICS_PER_ACCOUNT=true, since a label per account grows without bound.
 */
export const registry = new client.Registry()

const PREFIX = 'herold_'
/**
 * A send's origin: `transactional` (POST /messages), a campaign's (`newsletter`, `followup`, `automation`), a person's
 * reply (`conversation`), the built-in AI's (`ai`) or Herold's own messages (`system`: consent, opt-out, e-mails).
 */
export type SendOrigin = 'transactional' | 'newsletter' | 'followup' | 'automation' | 'conversation' | 'ai' | 'system'

let perAccount = false
let defaultsOn = false

/** HEROLD_METRICS_PER_ACCOUNT: an `account_id` label on the per-account counters (sends, inbound, webhooks). */
export function configureMetrics(options: { perAccount: boolean }): void {
  perAccount = options.perAccount
}

/** A counter of this process's registry, `herold_` before its name. */
const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
  new client.Counter({ name: `${PREFIX}${name}`, help, labelNames, registers: [registry] })

/** A histogram of this process's registry, `herold_` before its name. */
const histogram = <L extends string>(name: string, help: string, labelNames: readonly L[], buckets: number[]) =>
  new client.Histogram({ name: `${PREFIX}${name}`, help, labelNames, buckets, registers: [registry] })

const httpDuration = histogram(
  'http_request_duration_seconds',
  'HTTP requests by route pattern (never the raw URL) and status class',
  ['method', 'route', 'status_class'],
  [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
)
const sends = counter(
  'sends_total',
  'Outbound messages by channel, origin and outcome (sent, failed, skipped, retried)',
  ['channel', 'origin', 'outcome', 'account_id'],
)
const webhookDeliveries = counter(
  'webhook_deliveries_total',
  'Webhook delivery attempts by outcome (delivered, failed, retried, disabled)',
  ['outcome', 'account_id'],
)
const webhookLag = histogram(
  'webhook_first_attempt_lag_seconds',
  "Time from the event's commit to the first delivery attempt of a webhook",
  [],
  [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
)
const inbound = counter('inbound_messages_total', 'Inbound messages stored, by channel', ['channel', 'account_id'])
const providerErrors = counter(
  'provider_errors_total',
  "Errors of channel providers by provider and the provider's code (unreachable: no answer)",
  ['provider', 'code'],
)
const jobRuns = counter('job_runs_total', 'Jobs run by this process by queue and outcome (completed, failed, lost)', [
  'queue',
  'outcome',
])

/** Whether the operator asked for per-account labels (HEROLD_METRICS_PER_ACCOUNT). */
export const metricsPerAccount = (): boolean => perAccount

/** A per-account label when the operator asked for one. */
function withAccount<T extends Record<string, string>>(labels: T, accountId: string | undefined): T {
  return perAccount && accountId ? { ...labels, account_id: accountId } : labels
}

export function observeRequest(method: string, route: string | undefined, status: number, ms: number): void {
  httpDuration.observe(
    { method, route: route ?? 'unmatched', status_class: `${Math.floor(status / 100)}xx` },
    ms / 1000,
  )
}

export function countSends(
  input: { channel: 'chat' | 'email'; origin: SendOrigin; outcome: string; accountId?: string },
  n = 1,
): void {
  if (n <= 0) return
  const labels = { channel: input.channel, origin: input.origin, outcome: input.outcome }
  sends.inc(withAccount(labels, input.accountId), n)
}

export function countWebhookDelivery(outcome: string, accountId?: string): void {
  webhookDeliveries.inc(withAccount({ outcome }, accountId))
}

export function observeWebhookLag(seconds: number): void {
  webhookLag.observe(Math.max(0, seconds))
}

export function countInbound(channel: string, accountId?: string, n = 1): void {
  if (n > 0) inbound.inc(withAccount({ channel }, accountId), n)
}

export function countProviderError(provider: string, code: string): void {
  // provider codes are short numbers or words; anything else is cut so a message can never become a label
  providerErrors.inc({ provider, code: /^[\w.-]{1,32}$/.test(code) ? code : 'other' })
}

export function countJobRuns(queue: string, outcome: 'completed' | 'failed' | 'lost', n = 1): void {
  if (n > 0) jobRuns.inc({ queue, outcome }, n)
}

/** Something read when scraped (the job queues, the database pool); it sets its gauges. */
export type ScrapeSource = () => Promise<void> | void
const sources = new Set<ScrapeSource>()

/** Adds a source read at every scrape; returns its removal. */
export function addScrapeSource(source: ScrapeSource): () => void {
  sources.add(source)
  return () => {
    sources.delete(source)
  }
}

export function gauge(name: string, help: string, labelNames: string[]): client.Gauge<string> {
  const existing = registry.getSingleMetric(name)
  if (existing) return existing as client.Gauge<string>
  return new client.Gauge({ name, help, labelNames, registers: [registry] })
}

/** The text of GET /metrics: the sources read, then every metric of this process. */
export async function renderMetrics(): Promise<{ contentType: string; body: string }> {
  if (!defaultsOn) {
    // process metrics from the first scrape on: their event-loop monitor costs nothing in a server nobody scrapes
    defaultsOn = true
    client.collectDefaultMetrics({ register: registry })
  }
  await Promise.all([...sources].map(async (source) => source()))
  return { contentType: registry.contentType, body: await registry.metrics() }
}
