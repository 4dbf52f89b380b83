import { requireScope } from '../platform/auth/authenticate.ts'
import type { Permission } from '../platform/auth/roles.ts'
import type { Clock } from '../platform/clock.ts'
import type { Db } from '../platform/db/client.ts'
import { AppError, type ErrorBody } from '../platform/http/errors.ts'
import { toWire } from '../platform/http/serializer.ts'
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  type IdempotencyScope,
  refuseClaim,
  releaseIdempotencyKey,
  requestFingerprint,
} from '../platform/idempotency/idempotency.ts'
import type { PlatformDeps } from '../platform/module.ts'
import type { RateLimiter } from '../platform/rate-limit/rate-limiter.ts'
import { type Tool, type ToolCaller, validateArguments } from '../platform/tools/tool.ts'
import type { Services as ToolServices } from '../services.ts'
import { argumentsHash, consumeConfirmation, issueConfirmation } from './confirmations.ts'
import type { AssistantGrants } from './grants.ts'

export interface ToolRuntime {
  db: Db
  clock: Clock
  rateLimiter: RateLimiter
  /** the module services, and the tool server's own grants (its assistants' tools) */
  services: ToolServices & { assistants: AssistantGrants }
  platform: PlatformDeps
  tools: ReadonlyMap<string, Tool>
}

export interface ToolOutcome {
  result: Record<string, unknown>
  /** the stored first result of this idempotency_key, nothing executed */
  replayed: boolean
}

/**
 * One tool call, in the order REST follows: scope (403), rate limit (429, the credential's REST budget), argument
 * validation (400), then for two-step tools the preview or the confirm_token, for tools with idempotency_key the
 * stored first result, and the module service. Errors are thrown as AppError with REST's code, key and message.
 */
export async function callTool(
  runtime: ToolRuntime,
  caller: ToolCaller,
  name: string,
  rawArgs: unknown,
  options: { rateCounted?: boolean } = {},
): Promise<ToolOutcome> {
  const tool = runtime.tools.get(name)
  if (!tool) throw new AppError(404, 'not_found', `No tool named ${name}`, { key: 'tool_not_found' })
  if (tool.scope) requireScope(caller.tenant, tool.scope)
  if (!options.rateCounted) {
    const rate = await runtime.rateLimiter.consume(caller.rateKey, caller.tenant.actor.requestsPerMinute)
    if (!rate.allowed) {
      throw new AppError(429, 'rate_limited', `Rate limit of ${rate.limit} requests per minute exceeded`, {
        headers: { 'retry-after': String(rate.resetSeconds) },
        details: { retry_after: rate.resetSeconds },
      })
    }
  }
  const args = validateArguments(tool, rawArgs)
  // as the web app's routes: the body is checked first, then the member's permission
  if (tool.permission) requirePermission(caller, tool.permission)
  const ctx = { caller, tenant: caller.tenant, services: runtime.services, platform: runtime.platform }
  const { confirm_token: confirmToken, ...callArgs } = args as Record<string, unknown> & { confirm_token?: string }

  const idempotencyKey = tool.idempotencyKey ? (callArgs.idempotency_key as string | undefined) : undefined
  const scope: IdempotencyScope | null = idempotencyKey
    ? { accountId: caller.tenant.accountId, apiKeyId: caller.credentialId, key: idempotencyKey }
    : null
  const { idempotency_key: _key, ...fingerprinted } = callArgs
  const fingerprint = requestFingerprint('TOOL', tool.name, fingerprinted)

  if (tool.preview) {
    const binding = {
      accountId: caller.tenant.accountId,
      credentialId: caller.credentialId,
      tool: tool.name,
      argumentsHash: argumentsHash(callArgs),
    }
    // a call whose key already holds a result replays it: nothing runs, so no confirmation is needed
    if (scope) {
      const stored = await storedResult(runtime, scope, fingerprint)
      if (stored) return stored
    }
    if (confirmToken === undefined) {
      const preview = (await tool.preview(ctx, callArgs)) ?? {}
      const confirmation = await issueConfirmation(runtime.db, runtime.clock, binding)
      return {
        replayed: false,
        result: toWire({
          confirmation_required: true,
          executed: false,
          preview,
          confirm_token: confirmation.token,
          expires_at: confirmation.expiresAt,
          next: `Nothing was done. To execute, call ${tool.name} again with the same arguments and confirm_token.`,
        }) as Record<string, unknown>,
      }
    }
    await consumeConfirmation(runtime.db, runtime.clock, binding, confirmToken)
  }

  if (!scope) return { replayed: false, result: toWire(await tool.run(ctx, callArgs)) as Record<string, unknown> }
  return runOnce(runtime, scope, fingerprint, () => tool.run(ctx, callArgs))
}

/**
 * Team and credential management needs a member who may do it (as /app/team and /app/keys do): the web app's session
 * of an owner or admin, or an assistant such a member signed in with every scope. An API key is no member.
 */
function requirePermission(caller: ToolCaller, permission: Permission): void {
  const { actor } = caller.tenant
  if (actor.permissions?.includes(permission)) return
  const why =
    actor.type === 'api_key'
      ? 'An API key cannot do this: owners and admins do it in the web app, or through an assistant they signed in with every scope'
      : actor.type === 'oauth'
        ? 'This assistant cannot do this: it needs a sign-in by an owner or admin that grants every scope'
        : `Your role (${actor.role ?? 'none'}) does not allow this`
  throw new AppError(403, 'forbidden', why, { key: 'rolle_fehlt', details: { permission } })
}

/** A completed first result of this key, or null when the key is new; a different call with it is 422. */
async function storedResult(runtime: ToolRuntime, scope: IdempotencyScope, fingerprint: string) {
  const claim = await claimIdempotencyKey(runtime.db, runtime.clock, scope, fingerprint)
  if (claim.kind === 'started') {
    await releaseIdempotencyKey(runtime.db, scope)
    return null
  }
  return replayOf(claim)
}

function replayOf(claim: Awaited<ReturnType<typeof claimIdempotencyKey>>): ToolOutcome {
  refuseClaim(claim, { key: 'idempotency_key', request: 'call', other: 'a different tool or different arguments' })
  if (claim.kind !== 'replay') throw new Error('unexpected idempotency claim')
  const body = JSON.parse(claim.body) as Record<string, unknown>
  if (claim.status >= 400) {
    const { code, key, message, ...details } = (body as unknown as ErrorBody).error
    throw Object.assign(new AppError(claim.status, code, message, { key, details }), { replayed: true })
  }
  return { replayed: true, result: body }
}

/** Runs the tool under its idempotency key: the first final result (an error too) is stored and replayed. */
async function runOnce(
  runtime: ToolRuntime,
  scope: IdempotencyScope,
  fingerprint: string,
  run: () => Promise<Record<string, unknown>>,
): Promise<ToolOutcome> {
  const claim = await claimIdempotencyKey(runtime.db, runtime.clock, scope, fingerprint)
  if (claim.kind !== 'started') return replayOf(claim)
  let outcome: { status: number; body: string; result?: Record<string, unknown>; error?: unknown }
  try {
    const result = toWire(await run()) as Record<string, unknown>
    outcome = { status: 200, body: JSON.stringify(result), result }
  } catch (error) {
    if (!(error instanceof AppError)) {
      await releaseIdempotencyKey(runtime.db, scope).catch(() => {})
      throw error
    }
    outcome = { status: error.status, body: JSON.stringify(error.toBody()), error }
  }
  await completeIdempotencyKey(runtime.db, scope, {
    status: outcome.status,
    headers: { 'content-type': 'application/json' },
    body: outcome.body,
  })
  if (outcome.error) throw outcome.error
  return { replayed: false, result: outcome.result as Record<string, unknown> }
}
