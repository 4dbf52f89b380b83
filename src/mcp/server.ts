import type { Server } from '@modelcontextprotocol/sdk/server/index.js'
import type { CallToolResult, Tool as McpTool } from '@modelcontextprotocol/sdk/types.js'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import type { ResolvedKey } from '../platform/auth/authenticate.ts'
import type { CredentialCache } from '../platform/auth/credential-cache.ts'
import { AppError, errorResponses } from '../platform/http/errors.ts'
import type { PlatformDeps } from '../platform/module.ts'
import { memoryRateLimiter, type RateLimiter, redisRateLimiter } from '../platform/rate-limit/rate-limiter.ts'
import type { Tool, ToolCaller } from '../platform/tools/tool.ts'
import type { Services as ToolServices } from '../services.ts'
import { authenticateToolCaller } from './auth.ts'
import { callTool, type ToolRuntime } from './call.ts'
import { catalogue } from './catalogue.ts'
import { toolAppRoutes } from './consent.ts'
import { assistantGrants } from './grants.ts'
import { oauthRoutes, REGISTRATION, resourceMetadataUrl } from './oauth.ts'
import { plainSchema } from './outputs.ts'

export interface ToolServerOptions extends PlatformDeps {
  rateLimiter: RateLimiter
  credentials?: CredentialCache<ResolvedKey>
  /** the process's services (src/services.ts): tools call them as the REST operations behind them do */
  services: ToolServices
}

const INSTRUCTIONS =
  'Herold keeps the contacts, WhatsApp and e-mail conversations, templates, newsletters and automations of one business account. ' +
  'Tools that send, schedule, submit or delete are two-step: the first call answers a preview and a confirm_token and does nothing; ' +
  'show the preview to the user and, once they agree, call the same tool with the same arguments plus confirm_token. ' +
  'Errors carry code, key and message; branch on code and key.'

/** An MCP tool description of a catalogue tool: its schema with limits, annotations and required scope. */
export function mcpToolOf(tool: Tool): McpTool {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.scope ? `${tool.description} Scope: ${tool.scope}.` : tool.description,
    inputSchema: JSON.parse(JSON.stringify(tool.input)) as McpTool['inputSchema'],
    outputSchema: plainSchema(tool.output) as McpTool['outputSchema'],
    annotations: { title: tool.title, ...tool.annotations },
    _meta: { 'herold/scope': tool.scope, 'herold/rest': tool.rest, 'herold/two_step': tool.preview !== undefined },
  }
}

function toolResult(result: Record<string, unknown>, replayed: boolean): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(result) }],
    structuredContent: result,
    ...(replayed ? { _meta: { 'herold/idempotent_replayed': true } } : {}),
  }
}

function errorResult(error: AppError): CallToolResult {
  const body = error.toBody()
  return {
    isError: true,
    content: [{ type: 'text', text: `${error.code} (${error.key}): ${error.message}` }],
    structuredContent: { ...body, status: error.status },
  }
}

/**
 * The MCP SDK and the zod it validates with (about 1.2 MB of modules, several MB of a process's heap) load with the
 * first MCP request, not with every server (docs/performance.md, idle memory).
 */
let sdkLoaded: ReturnType<typeof loadSdk> | undefined
async function loadSdk() {
  const [server, http, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ])
  return {
    Server: server.Server,
    StreamableHTTPServerTransport: http.StreamableHTTPServerTransport,
    CallToolRequestSchema: types.CallToolRequestSchema,
    ListToolsRequestSchema: types.ListToolsRequestSchema,
  }
}
const mcpSdk = () => {
  sdkLoaded ??= loadSdk()
  return sdkLoaded
}

/** An MCP server for one request, bound to its authenticated caller (stateless: any process can answer any call). */
async function mcpServerFor(runtime: ToolRuntime, caller: ToolCaller, log: FastifyRequest['log']): Promise<Server> {
  const { Server, CallToolRequestSchema, ListToolsRequestSchema } = await mcpSdk()
  const server = new Server(
    { name: 'herold', title: 'Herold', version: '1.0.0' },
    { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS },
  )
  const listed = [...runtime.tools.values()].map(mcpToolOf)
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: listed }))
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    try {
      const outcome = await callTool(runtime, caller, request.params.name, request.params.arguments ?? {})
      return toolResult(outcome.result, outcome.replayed)
    } catch (error) {
      if (error instanceof AppError) return errorResult(error)
      log.error({ err: error, tool: request.params.name }, 'tool failed')
      return errorResult(new AppError(500, 'internal_error', 'An unexpected error occurred'))
    }
  })
  return server
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]'])

function hostnameOf(host: string): string {
  return host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0]
}

/**
 * Against DNS rebinding (MCP transport specification): the Host header must name this server (HEROLD_PUBLIC_URL's
 * host, or a loopback name, which a rebound foreign domain never is), and an Origin, when a browser sends one, must
 * be HEROLD_PUBLIC_URL's origin or a loopback origin.
 */
export function checkHostAndOrigin(publicUrl: string, host: string | undefined, origin: string | undefined): void {
  const own = new URL(publicUrl)
  const hostOk =
    host !== undefined &&
    (host.toLowerCase() === own.host.toLowerCase() || LOOPBACK_HOSTS.has(hostnameOf(host.toLowerCase())))
  if (!hostOk) {
    throw new AppError(403, 'forbidden', `Host ${host ?? '(none)'} is not this server`, { key: 'host_not_allowed' })
  }
  if (origin === undefined) return
  let parsed: URL | null = null
  try {
    parsed = new URL(origin)
  } catch {
    parsed = null
  }
  const originOk =
    parsed !== null &&
    (parsed.origin === own.origin ||
      ((parsed.protocol === 'http:' || parsed.protocol === 'https:') && LOOPBACK_HOSTS.has(parsed.hostname)))
  if (!originOk) {
    throw new AppError(403, 'forbidden', `Origin ${origin} may not call the tool server`, { key: 'origin_not_allowed' })
  }
}

function sendError(reply: FastifyReply, error: AppError, publicUrl: string): FastifyReply {
  if (error.status === 401) {
    // RFC 9728: where an assistant finds how to get a token for this resource
    reply.header('www-authenticate', `Bearer realm="herold", resource_metadata="${resourceMetadataUrl(publicUrl)}"`)
  }
  return reply.headers(error.headers).code(error.status).send(error.toBody())
}

/**
 * The tool server: MCP over Streamable HTTP at /mcp (official SDK, stateless, JSON responses), and every tool over
 * plain HTTP at POST /v1/tools/{tool_name} (API key, through the REST pipeline) and POST /app/{tool_name} (the web
 * app's session), with the OAuth endpoints and the consent step.
 */
export function toolServer(options: ToolServerOptions) {
  return async (app: FastifyInstance): Promise<void> => {
    const platform = { config: options.config, database: options.database, clock: options.clock }
    const services = { ...options.services, assistants: assistantGrants(options.database.orm, options.clock) }
    const runtime: ToolRuntime = {
      db: options.database.orm,
      clock: options.clock,
      rateLimiter: options.rateLimiter,
      services,
      platform,
      tools: new Map(catalogue.map((tool) => [tool.name, tool])),
    }
    const publicUrl = options.config.publicUrl

    app.post('/mcp', { config: { public: true }, schema: { hide: true } }, async (request, reply) => {
      let caller: ToolCaller
      try {
        checkHostAndOrigin(publicUrl, request.headers.host, request.headers.origin)
        caller = await authenticateToolCaller(
          runtime.db,
          runtime.clock,
          request.headers.authorization,
          options.credentials,
        )
      } catch (error) {
        if (error instanceof AppError) return sendError(reply, error, publicUrl)
        throw error
      }
      const server = await mcpServerFor(runtime, caller, request.log)
      const { StreamableHTTPServerTransport } = await mcpSdk()
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
      reply.hijack()
      reply.raw.on('close', () => {
        void transport.close()
        void server.close()
      })
      await server.connect(transport)
      await transport.handleRequest(request.raw, reply.raw, request.body)
    })

    // stateless: no server-initiated stream to open (GET) and no session to end (DELETE)
    const notAllowed = async (request: FastifyRequest, reply: FastifyReply) => {
      try {
        checkHostAndOrigin(publicUrl, request.headers.host, request.headers.origin)
      } catch (error) {
        if (error instanceof AppError) return sendError(reply, error, publicUrl)
        throw error
      }
      return reply
        .code(405)
        .header('allow', 'POST')
        .send(new AppError(405, 'method_not_allowed', 'The tool server takes POST requests only').toBody())
    }
    app.get('/mcp', { config: { public: true }, schema: { hide: true } }, notAllowed)
    app.delete('/mcp', { config: { public: true }, schema: { hide: true } }, notAllowed)

    await app.register(
      oauthRoutes({
        db: runtime.db,
        clock: runtime.clock,
        publicUrl,
        clientMetadata: {
          httpLoopback: options.config.devOAuthClientMetadataOverHttpLoopback,
          allowPrivateTargets: options.config.allowPrivateTargets,
        },
        // per address, shared between processes through Redis when it is configured
        registrationLimiter: options.config.redisUrl
          ? redisRateLimiter(options.config.redisUrl, REGISTRATION.perAddress, REGISTRATION.windowSeconds)
          : memoryRateLimiter(REGISTRATION.perAddress, REGISTRATION.windowSeconds),
      }),
    )
    // the web app's side: the OAuth consent step and POST /app/{tool_name} with the member's session
    await app.register(toolAppRoutes({ db: runtime.db, clock: runtime.clock, publicUrl, runtime }), { prefix: '/app' })

    await app.register(
      async (v1) => {
        v1.post<{ Params: { tool_name: string }; Body: Record<string, unknown> | undefined }>(
          '/tools/:tool_name',
          {
            schema: {
              operationId: 'callTool',
              summary: 'Call a tool of the tool server over plain HTTP',
              description:
                'The body is the tool’s arguments (the JSON Schema of each tool is listed by the MCP server at /mcp; see docs/tool-server.md). ' +
                'The tool’s own scope applies. Two-step tools (send, schedule, submit, delete) answer a preview with confirm_token first and do nothing; the same call with confirm_token executes. ' +
                'Errors are the usual envelope with the REST status; a replayed idempotency_key answers Idempotent-Replayed: true.',
              tags: ['tools'],
              params: Type.Object({
                tool_name: Type.String({ enum: [...runtime.tools.keys()], description: 'the tool’s name' }),
              }),
              // a plain object schema: Fastify's removeAdditional would empty one that declares additionalProperties
              body: Type.Optional(
                Type.Unsafe<Record<string, unknown>>({ type: 'object', description: 'the tool’s arguments' }),
              ),
              response: {
                ...errorResponses({
                  400: "bad_request: the arguments do not match the tool's schema; confirm_token_invalid: the confirm_token is unknown, used, expired or for other arguments; a tool's own 400 keys are those of the REST route it mirrors (docs/tool-server.md)",
                  403: "forbidden (key rolle_fehlt): the member's role may not use the tool; the codes of the REST route the tool mirrors",
                  404: 'not_found (key tool_not_found): no such tool; not_found: a named resource is missing or belongs to another account',
                  409: 'the conflict codes of the REST route the tool mirrors (e.g. contact_exists, template_in_use, webhook_limit_reached)',
                  422: 'the codes of the REST route the tool mirrors (e.g. invalid_variables, template_not_approved)',
                  502: 'the provider codes of the REST route the tool mirrors (send_failed, provider_unreachable)',
                }),
                200: Type.Object({}, { additionalProperties: true, description: 'the tool’s result' }),
              },
            },
          },
          async (request, reply) => {
            const tenant = request.tenant
            const keyId = tenant.actor.keyId as string
            const caller = { tenant, credentialId: keyId, rateKey: `key:${keyId}` }
            const outcome = await callTool(runtime, caller, request.params.tool_name, request.body ?? {}, {
              rateCounted: true,
            }).catch((error: unknown) => {
              if (error instanceof AppError && (error as AppError & { replayed?: boolean }).replayed) {
                reply.header('idempotent-replayed', 'true')
              }
              throw error
            })
            if (outcome.replayed) reply.header('idempotent-replayed', 'true')
            return outcome.result
          },
        )
      },
      { prefix: '/v1' },
    )
  }
}
