import { randomUUID } from 'node:crypto'
import type { Account } from '../../platform/auth/accounts.service.ts'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError } from '../../platform/http/errors.ts'
import { toPage } from '../../platform/http/pagination.ts'
import type { ClaimedJob } from '../../platform/jobs/jobs.ts'
import { enqueue } from '../../platform/jobs/jobs.ts'
import { OutboundError, type OutboundHttp } from '../../platform/outbound-http.ts'
import type { InboundStored } from '../inbox/index.ts'
import {
  type ChatMessage,
  PROMPT_PASSAGES,
  parseReplyDecision,
  parseTagSuggestion,
  type ReplyDecision,
  replyPrompt,
  tagPrompt,
} from './knowledge.ai.rules.ts'
import * as repo from './knowledge.repository.ts'
import { searchRanked } from './knowledge.service.ts'
import type { AiReplyState, PromptPassage } from './knowledge.tables.ts'

export const AI_REPLY_QUEUE = 'knowledge.ai_reply'
export const AI_TAGS_QUEUE = 'knowledge.ai_tags'

/** The customer service window: a free-text reply is possible this long after the customer's message. */
const WINDOW_MS = 24 * 3600_000
const HOUR_MS = 3600_000
/** Tag suggestions per contact and hour: one is enough to label a conversation. */
const TAG_SUGGESTIONS_PER_HOUR = 1
/** Tags offered to the model: the account's most used ones. */
const MAX_TAGS_OFFERED = 200

export interface AiEndpoint {
  url?: string
  key?: string
  model?: string
}

/** Why the AI calls nothing for an account, or null when it works. */
export function aiUnavailableReason(endpoint: AiEndpoint): string | null {
  if (!endpoint.url) return 'No AI endpoint is configured (HEROLD_AI_URL is not set): nothing is sent to any AI.'
  if (!endpoint.model) return 'HEROLD_AI_MODEL is not set: nothing is sent to the AI endpoint.'
  return null
}

interface InboundJob {
  message_id: string
  contact_id: string
  conversation_id: string
  text: string
  received_at: string
}

/**
 * In the transaction that stores an inbound chat text: when the account switched the AI on and the text is not a
 * consent keyword, a reply job and a tag job are queued. They run after the commit, so the inbound webhook is
 * answered without waiting for any model.
 */
/** The AI settings' read of aiOnInbound, folded into the inbox's first statement of the message. */
export const aiSettingsPreload = (accountId: string) => repo.settingsAsJsonSql(accountId)

/** `preloaded`: the value of aiSettingsPreload, read with the inbox's own statement (else it is read here). */
export async function aiOnInbound(
  tx: Db,
  clock: Clock,
  message: InboundStored,
  deps: AiListenerDeps,
  preloaded?: { value: unknown },
): Promise<void> {
  if (message.channel !== 'chat' || message.type !== 'text' || message.text.trim() === '') return
  const settings = preloaded ? repo.settingsFromJson(preloaded.value) : await repo.settingsOf(tx, message.accountId)
  if (!settings || (!settings.repliesEnabled && !settings.tagsEnabled)) return
  if (await deps.isConsentKeyword(tx, message.accountId, message)) return
  const payload: InboundJob = {
    message_id: message.messageId,
    contact_id: message.contactId,
    conversation_id: message.conversationId,
    text: message.text,
    received_at: clock.now().toISOString(),
  }
  const queues = [settings.repliesEnabled ? AI_REPLY_QUEUE : null, settings.tagsEnabled ? AI_TAGS_QUEUE : null]
  // one contact's replies run one at a time, so the per-contact rate holds
  const jobs = queues
    .filter((queue) => queue !== null)
    .map((queue) => ({
      accountId: message.accountId,
      queue,
      payload: { ...payload },
      concurrencyKey: message.contactId,
    }))
  await enqueue(tx, clock, jobs)
}

export interface AiListenerDeps {
  isConsentKeyword(db: Db, accountId: string, message: { type: string; text: string }): Promise<boolean>
}

export interface AiServiceDeps {
  db: Db
  clock: Clock
  endpoint: AiEndpoint
  /** calls to the operator's AI endpoint (a local server may sit on a private address) */
  http: OutboundHttp
  account(accountId: string): Promise<Pick<Account, 'name' | 'timezone' | 'sendingPaused'>>
  contact(
    db: Db,
    accountId: string,
    contactId: string,
  ): Promise<{ phone: string; optinChat: string; name: string } | null>
  sendText(
    accountId: string,
    input: { contactId: string; to: string; text: string },
    options: { ai: true },
  ): Promise<{ ok: true; messageId: string | null } | { ok: false; error: { kind: string; message: string } }>
  quota: {
    reserve(accountId: string, timezone: string): Promise<string | null>
    release(accountId: string, month: string): Promise<void>
  }
  markForPerson(db: Db, accountId: string, conversationId: string, reason: string): Promise<void>
  /** a failed call to the endpoint, logged without secrets */
  logFailure(data: {
    account_id: string
    job: 'reply' | 'tags' | 'test'
    endpoint: string | null
    model: string | null
    reason: string
  }): void
  /** the account's tag names (not system tags), most used first */
  tagNames(accountId: string): Promise<string[]>
  addTag(tx: Db, input: { accountId: string; contactId: string; tag: string }): Promise<boolean>
}

export class AiCallFailed extends Error {
  /** the finer reason, for the envelope's key of the web app's test question */
  readonly key: string
  constructor(message: string, key = 'ai_call_failed') {
    super(message)
    this.key = key
  }
}

/** The envelope's key of a failed call: the page words each one (ai_timeout, ai_unreachable, ai_status …). */
export function failureKey(error: unknown): string {
  if (error instanceof AiCallFailed) return error.key
  if (error instanceof OutboundError) {
    if (error.code === 'timeout') return 'ai_timeout'
    if (error.code === 'dns_failed') return 'ai_dns_failed'
    return 'ai_unreachable'
  }
  return 'ai_call_failed'
}

/** Why nothing can be asked, as the envelope's key. */
export function unavailableKey(endpoint: AiEndpoint): string {
  return endpoint.url ? 'ai_model_missing' : 'ai_not_configured'
}

/** A failed call in words that hold no secret: our own message, or the transport's error code. */
export function failureReason(error: unknown): string {
  if (error instanceof AiCallFailed) return error.message
  if (error instanceof OutboundError) {
    if (error.code === 'timeout') return 'the AI endpoint did not answer in time'
    if (error.code === 'dns_failed') return "the AI endpoint's host name does not resolve"
    return `the AI endpoint could not be reached (${error.code})`
  }
  return 'the AI endpoint could not be called'
}

function hostOf(url: string | undefined): string | null {
  if (!url) return null
  try {
    return new URL(url).host
  } catch {
    return null
  }
}

/** The passages with `used` set for those the answer cites. */
function markUsed(passages: PromptPassage[], decision: ReplyDecision): PromptPassage[] {
  const cited = decision.kind === 'answer' ? decision.used : []
  return passages.map((p, i) => ({ ...p, used: cited.includes(i + 1) }))
}

export function replyView(row: repo.AiReplyRow) {
  return {
    id: row.id,
    inbound_message_id: row.inboundMessageId,
    message_id: row.messageId,
    contact_id: row.contactId,
    conversation_id: row.conversationId,
    state: row.state,
    reason: row.reason,
    question: row.question,
    reply: row.replyText,
    passages: row.passages,
    model: row.model,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

export function aiService(deps: AiServiceDeps) {
  const { db, clock, endpoint } = deps
  const unavailable = aiUnavailableReason(endpoint)

  /** A job's inbound message, account and settings; null when the AI is unavailable or this part of it is off. */
  async function openJob(job: ClaimedJob, part: 'repliesEnabled' | 'tagsEnabled') {
    if (unavailable) return null
    const settings = await repo.settingsOf(db, job.accountId)
    if (!settings?.[part]) return null
    return { input: job.payload as unknown as InboundJob, accountId: job.accountId, settings }
  }

  /** One chat completion; a network error or a non-2xx answer throws (the job is retried). */
  async function complete(messages: ChatMessage[]): Promise<string> {
    if (!endpoint.url || !endpoint.model) throw new AiCallFailed('no AI endpoint is configured')
    const url = /\/chat\/completions$/.test(endpoint.url) ? endpoint.url : `${endpoint.url}/chat/completions`
    const response = await deps.http.send(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        ...(endpoint.key ? { authorization: `Bearer ${endpoint.key}` } : {}),
      },
      body: JSON.stringify({ model: endpoint.model, messages, temperature: 0 }),
    })
    if (response.status < 200 || response.status > 299) {
      throw new AiCallFailed(`the AI endpoint answered ${response.status}`, 'ai_status')
    }
    let content: unknown
    try {
      const body = JSON.parse(response.body.toString('utf8')) as {
        choices?: Array<{ message?: { content?: unknown } }>
      }
      content = body.choices?.[0]?.message?.content
    } catch {
      throw new AiCallFailed('the AI endpoint did not answer with JSON', 'ai_not_json')
    }
    if (typeof content !== 'string')
      throw new AiCallFailed('the AI endpoint answered without a message', 'ai_no_message')
    return content
  }

  async function settle(
    row: { accountId: string; id: string },
    state: AiReplyState,
    change: {
      reason?: string | null
      replyText?: string | null
      messageId?: string | null
      passages?: PromptPassage[]
    } = {},
  ) {
    await repo.updateReply(db, row.accountId, row.id, { state, ...change, updatedAt: clock.now() })
  }

  /** Declined or skipped in a way a person should see: the conversation is marked for them. */
  async function handOver(
    row: { accountId: string; id: string },
    job: InboundJob,
    state: AiReplyState,
    reason: string,
    change: Parameters<typeof settle>[2] & { model?: string | null; detail?: string } = {},
  ) {
    const { detail, ...fields } = change
    const stored = detail ? `${reason}: ${detail}` : reason
    await db.transaction(async (tx) => {
      await repo.updateReply(tx, row.accountId, row.id, { state, reason: stored, ...fields, updatedAt: clock.now() })
      await deps.markForPerson(tx, row.accountId, job.conversation_id, reason)
    })
  }

  /** Records a failed call for the account (shown in GET /settings/ai) and logs it without secrets. */
  async function recordFailure(accountId: string, job: 'reply' | 'tags', error: unknown): Promise<string> {
    const reason = failureReason(error)
    deps.logFailure({
      account_id: accountId,
      job,
      endpoint: hostOf(endpoint.url),
      model: endpoint.model ?? null,
      reason,
    })
    await repo.recordAiFailure(db, accountId, clock.now(), reason)
    return reason
  }

  /** The best passages for a question, as a reply's prompt holds them (none: no model is asked). */
  async function promptPassages(accountId: string, question: string): Promise<PromptPassage[]> {
    const found = await searchRanked(db, accountId, question, PROMPT_PASSAGES, { mode: 'any' })
    return found.hits.map((hit) => ({
      document_id: hit.document_id,
      document_title: hit.title,
      position: hit.position,
      heading: hit.heading,
      text: hit.text,
      rank: Math.round(hit.rank * 1e6) / 1e6,
      used: false,
    }))
  }

  /** The model's decision on a question from the passages: the reply prompt, one call, the strict reading. */
  async function decide(business: string, question: string, passages: PromptPassage[]): Promise<ReplyDecision> {
    const answer = await complete(replyPrompt({ business, question, passages }))
    return parseReplyDecision(answer, passages.length)
  }

  return {
    unavailable,

    /**
     * POST /app/knowledge/ask: a question answered exactly as an inbound chat text would be (the same passages,
     * prompt, model and reading of its answer), with nothing sent, stored or marked. A failed call is logged, not
     * recorded as the account's last failure (that one tells what happened to real messages).
     */
    async ask(accountId: string, question: string) {
      if (unavailable) throw new AppError(409, 'ai_unavailable', unavailable, { key: unavailableKey(endpoint) })
      const passages = await promptPassages(accountId, question)
      const model = endpoint.model ?? null
      if (passages.length === 0) {
        return { outcome: 'declined' as const, answer: null, reason: 'no_passages', detail: null, passages, model }
      }
      const account = await deps.account(accountId)
      let decision: ReplyDecision
      try {
        decision = await decide(account.name, question, passages)
      } catch (error) {
        const reason = failureReason(error)
        deps.logFailure({ account_id: accountId, job: 'test', endpoint: hostOf(endpoint.url), model, reason })
        throw new AppError(502, 'ai_call_failed', `The AI could not answer: ${reason}`, { key: failureKey(error) })
      }
      const used = markUsed(passages, decision)
      return decision.kind === 'answer'
        ? { outcome: 'answer' as const, answer: decision.text, reason: null, detail: null, passages: used, model }
        : {
            outcome: 'declined' as const,
            answer: null,
            reason: decision.reason,
            detail: decision.detail,
            passages: used,
            model,
          }
    },

    async settings(accountId: string) {
      return settingsView(await repo.settingsOf(db, accountId), endpoint)
    },

    async updateSettings(
      accountId: string,
      change: { replies_enabled?: boolean; tags_enabled?: boolean; replies_per_contact_per_hour?: number },
    ) {
      const row = await repo.upsertSettings(db, {
        accountId,
        ...(change.replies_enabled === undefined ? {} : { repliesEnabled: change.replies_enabled }),
        ...(change.tags_enabled === undefined ? {} : { tagsEnabled: change.tags_enabled }),
        ...(change.replies_per_contact_per_hour === undefined
          ? {}
          : { repliesPerContactPerHour: change.replies_per_contact_per_hour }),
        updatedAt: clock.now(),
      })
      return settingsView(row, endpoint)
    },

    async listReplies(
      tenant: Pick<TenantContext, 'accountId'>,
      query: { limit: number; offset: number; conversation_id?: string; message_id?: string },
    ) {
      const rows = await repo.listReplies(db, tenant.accountId, {
        limit: query.limit,
        offset: query.offset,
        conversationId: query.conversation_id,
        messageId: query.message_id,
      })
      const page = toPage(rows, query.limit, query.offset)
      return { ...page, items: page.items.map(replyView) }
    },

    /**
     * Job: the reply to one inbound message. The row is committed `sending` before the provider call, so a retry
     * after a crash never sends twice (it ends `interrupted`).
     */
    async reply(job: ClaimedJob): Promise<void> {
      const opened = await openJob(job, 'repliesEnabled')
      if (!opened) return
      const { input, accountId, settings } = opened
      const row = await db.transaction(async (tx) => {
        const claimed = await repo.claimReply(tx, {
          accountId,
          id: randomUUID(),
          inboundMessageId: input.message_id,
          contactId: input.contact_id,
          question: input.text,
          createdAt: clock.now(),
        })
        if (claimed.state === 'sending') {
          await repo.updateReply(tx, accountId, claimed.id, {
            state: 'interrupted',
            reason: 'the worker stopped during the send; it may have gone out',
            updatedAt: clock.now(),
          })
        }
        if (claimed.conversationId === null) {
          await repo.updateReply(tx, accountId, claimed.id, {
            conversationId: input.conversation_id,
            updatedAt: clock.now(),
          })
        }
        return claimed
      })
      if (row.state !== 'pending') return

      const contact = await deps.contact(db, accountId, input.contact_id)
      if (!contact || contact.phone === '') return settle(row, 'skipped', { reason: 'contact_gone' })
      if (contact.optinChat === 'opted_out') return settle(row, 'skipped', { reason: 'opted_out' })
      if (clock.now().getTime() - new Date(input.received_at).getTime() >= WINDOW_MS) {
        return handOver(row, input, 'skipped', 'window_closed')
      }
      const since = new Date(clock.now().getTime() - HOUR_MS)
      if ((await repo.repliesSentSince(db, accountId, input.contact_id, since)) >= settings.repliesPerContactPerHour) {
        return handOver(row, input, 'skipped', 'rate_limited')
      }

      const passages = await promptPassages(accountId, input.text)
      // nothing in the documents touches the question: no model is asked
      if (passages.length === 0) return handOver(row, input, 'declined', 'no_passages')

      const account = await deps.account(accountId)
      let decision: ReplyDecision
      try {
        decision = await decide(account.name, input.text, passages)
      } catch (error) {
        // the endpoint is down, answered 5xx, timed out or answered no chat completion: the customer's message
        // is not lost, a person gets it at once (no retry that would keep them waiting)
        const reason = await recordFailure(accountId, 'reply', error)
        return handOver(row, input, 'failed', 'ai_call_failed', {
          passages,
          model: endpoint.model ?? null,
          detail: reason,
        })
      }
      await repo.updateReply(db, accountId, row.id, {
        passages: markUsed(passages, decision),
        model: endpoint.model ?? null,
        updatedAt: clock.now(),
      })
      if (decision.kind === 'decline') {
        await db.transaction(async (tx) => {
          const reason = decision.detail ? `${decision.reason}: ${decision.detail}` : decision.reason
          await repo.updateReply(tx, accountId, row.id, { state: 'declined', reason, updatedAt: clock.now() })
          await deps.markForPerson(tx, accountId, input.conversation_id, decision.reason)
        })
        return
      }

      // opted out while the model was thinking: nothing goes out
      const fresh = await deps.contact(db, accountId, input.contact_id)
      if (!fresh || fresh.optinChat === 'opted_out') return settle(row, 'skipped', { reason: 'opted_out' })
      const month = await deps.quota.reserve(accountId, account.timezone)
      if (month === null) return handOver(row, input, 'skipped', 'quota_used_up')
      await settle(row, 'sending', { replyText: decision.text })
      let outcome: Awaited<ReturnType<AiServiceDeps['sendText']>>
      try {
        outcome = await deps.sendText(
          accountId,
          { contactId: input.contact_id, to: fresh.phone, text: decision.text },
          { ai: true },
        )
      } catch (error) {
        // our own checks (sending paused, no number) refused it before any provider call
        if (!(error instanceof AppError)) throw error
        await deps.quota.release(accountId, month)
        return handOver(row, input, 'skipped', error.key)
      }
      if (!outcome.ok) {
        await deps.quota.release(accountId, month)
        return handOver(row, input, 'failed', `send_failed: ${outcome.error.kind}`)
      }
      await settle(row, 'sent', { messageId: outcome.messageId })
    },

    /** Job: tags for the inbound message, chosen by the model from the account's existing tags (origin ki). */
    async suggestTags(job: ClaimedJob): Promise<void> {
      const opened = await openJob(job, 'tagsEnabled')
      if (!opened) return
      const { input, accountId } = opened
      const since = new Date(clock.now().getTime() - HOUR_MS)
      if ((await repo.tagSuggestionsSince(db, accountId, input.contact_id, since)) >= TAG_SUGGESTIONS_PER_HOUR) return
      const contact = await deps.contact(db, accountId, input.contact_id)
      if (!contact) return
      const offered = (await deps.tagNames(accountId)).slice(0, MAX_TAGS_OFFERED)
      if (offered.length === 0) return
      let answer: string
      try {
        answer = await complete(tagPrompt({ tags: offered, message: input.text }))
      } catch (error) {
        // tags are a help, not a duty: the failure is recorded and shown, the message stays as it is
        await recordFailure(accountId, 'tags', error)
        return
      }
      const suggested = parseTagSuggestion(answer, offered)
      await db.transaction(async (tx) => {
        const recorded = await repo.insertTagSuggestion(tx, {
          accountId,
          inboundMessageId: input.message_id,
          contactId: input.contact_id,
          suggested,
          createdAt: clock.now(),
        })
        if (!recorded) return
        const added: string[] = []
        for (const tag of suggested) {
          if (await deps.addTag(tx, { accountId, contactId: input.contact_id, tag })) added.push(tag)
        }
        await repo.updateTagSuggestion(tx, accountId, input.message_id, { suggested, added })
      })
    },
  }
}

function settingsView(row: repo.AiSettingsRow | undefined, endpoint: AiEndpoint) {
  const unavailable = aiUnavailableReason(endpoint)
  const replies = row?.repliesEnabled ?? false
  const tags = row?.tagsEnabled ?? false
  const off =
    !replies && !tags ? 'The AI is switched off for this account (replies_enabled and tags_enabled are false).' : null
  let host: string | null = null
  if (endpoint.url) {
    try {
      host = new URL(endpoint.url).host
    } catch {
      host = null
    }
  }
  return {
    replies_enabled: replies,
    tags_enabled: tags,
    replies_per_contact_per_hour: row?.repliesPerContactPerHour ?? 5,
    available: unavailable === null,
    active: unavailable === null && off === null,
    reason: unavailable ?? off,
    model: endpoint.model ?? null,
    endpoint: host,
    last_failure:
      row?.lastFailureAt && row.lastFailureReason
        ? { at: row.lastFailureAt.toISOString(), reason: row.lastFailureReason }
        : null,
  }
}

export type AiService = ReturnType<typeof aiService>
