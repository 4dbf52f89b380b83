import { randomUUID } from 'node:crypto'
import { and, eq, sql } from 'drizzle-orm'
import type { Clock } from '../../platform/clock.ts'
import { inAccount } from '../../platform/db/account-rows.ts'
import type { Db } from '../../platform/db/client.ts'
import { rows } from '../../platform/db/rows.ts'
import { groupCommit } from '../../platform/jobs/group-commit.ts'
import { enqueue } from '../../platform/jobs/jobs.ts'
import {
  type ChatConnection,
  type ChatProvider,
  type EmailProvider,
  type InboundBatch,
  InboundRejected,
  mapWhatsAppError,
  type TemplateAtProvider,
  type TemplateStatus,
} from './channels.provider.ts'
import { sandboxOutbox, sandboxTemplates } from './channels.tables.ts'
import { variablesAtEdges } from './whatsapp.rules.ts'

export const SANDBOX_STATUS_QUEUE = 'channels.sandbox_status'
export const SERVICE_WINDOW_MS = 24 * 60 * 60 * 1000

/**
 * The sandbox's template rule, modelled on WhatsApp's review: a template is rejected when its name is not
 * lower-case letters, digits and underscores, when its text is empty, when it starts or ends with a
 * variable (whatsapp.rules.ts, shared with the templates check), or when it contains an empty `{{}}`; otherwise it
 * is approved at once.
 */
export function sandboxTemplateDecision(template: Pick<TemplateAtProvider, 'name' | 'content'>): TemplateStatus {
  if (!/^[a-z0-9_]{1,512}$/.test(template.name))
    return { status: 'REJECTED', reason: 'INVALID_FORMAT: the name must be lower-case letters, digits and _' }
  const text = template.content.trim()
  if (text === '') return { status: 'REJECTED', reason: 'INVALID_FORMAT: the body is empty' }
  if (/\{\{\s*\}\}/.test(text)) return { status: 'REJECTED', reason: 'INVALID_FORMAT: empty variable {{}}' }
  const edges = variablesAtEdges(text)
  if (edges.start || edges.end)
    return { status: 'REJECTED', reason: 'INVALID_FORMAT: the body starts or ends with a variable' }
  return { status: 'APPROVED', reason: null }
}

/** The 24-hour customer service window: free text only within 24 h of the customer's last message. */
export function insideServiceWindow(lastInboundAt: Date | null, now: Date): boolean {
  return lastInboundAt !== null && now.getTime() - lastInboundAt.getTime() < SERVICE_WINDOW_MS
}

/** A send the provider refuses, with the Cloud API's error code. */
const refusal = (code: number, message: string) => ({ ok: false as const, error: mapWhatsAppError(code, message) })

export interface SandboxDeps {
  db: Db
  clock: Clock
  /** the customer's last inbound chat message */
  lastInboundAt(accountId: string, contactId: string): Promise<Date | null>
}

/** Simulated inbound message of the sandbox endpoint and `herold sandbox inbound`. */
export interface SandboxInbound {
  from: string
  name?: string
  text?: string
  button?: string
  media?: { data_base64: string; mime: string; filename?: string }
  location?: { latitude: number; longitude: number; name?: string }
}

function mediaType(mime: string): string {
  if (mime.startsWith('image/')) return 'image'
  if (mime.startsWith('video/')) return 'video'
  if (mime.startsWith('audio/')) return 'audio'
  return 'document'
}

export function sandboxInboundBatch(input: SandboxInbound, id = `sandbox.${randomUUID()}`): InboundBatch {
  const base = { providerMessageId: id, from: input.from, name: input.name ?? '' }
  if (input.media) {
    const data = Buffer.from(input.media.data_base64, 'base64')
    return {
      statuses: [],
      messages: [
        {
          ...base,
          type: mediaType(input.media.mime),
          text: input.text ?? '',
          media: { mime: input.media.mime, filename: input.media.filename, data },
        },
      ],
    }
  }
  if (input.location) {
    const { latitude, longitude, name } = input.location
    const text = `${name ? `${name} ` : ''}(${latitude}, ${longitude})`
    return { statuses: [], messages: [{ ...base, type: 'location', text, media: null }] }
  }
  if (input.button !== undefined) {
    return { statuses: [], messages: [{ ...base, type: 'button', text: input.button, media: null }] }
  }
  return { statuses: [], messages: [{ ...base, type: 'text', text: input.text ?? '', media: null }] }
}

/**
 * chat `sandbox`: WhatsApp's behaviour without WhatsApp. Free text outside the 24-hour window fails with
 * 131047 like the Cloud API; a sent message reports delivered after 1 s and read after 2 s, rounded down to a tenth of a second (durable jobs, on
 * the injectable clock, one job per batch of messages sent together); templates are decided by
 * sandboxTemplateDecision; a template to a customer beyond the number's daily limit of new conversations fails with
 * 131048 (spam rate limit), a throughput refusal. A number connected with a refusal rate (sandboxRefuseAbove) answers
 * 130429 to its messages beyond that many in one second, counted over every process (adaptive pace).
 */
/** the sandbox's statuses come due on steps of this many milliseconds (keepAll) */
const STATUS_STEP_MS = 100
/** how long the sandbox's answer to a send takes at least: what came meanwhile is kept together (keepAll) */
const SANDBOX_GATHER_MS = 20

export function sandboxChatProvider(deps: SandboxDeps): ChatProvider {
  const { db, clock } = deps

  /**
   * Messages sent at the same time (a batch of the send worker) are kept together: one insert into the outbox and,
   * per account, one delivered and one read job naming all of them, in one transaction. The simulation so costs a
   * few statements per batch, less than the sends it follows. A number told to refuse above a rate (throughput)
   * admits, under a lock of the account, only what its outbox of the last second leaves room for; the rest is
   * refused (null), so every process together sees the Cloud API's limit.
   */
  const keepAll = groupCommit(
    async (
      batch: Array<{
        accountId: string
        recipient: string
        payload: Record<string, unknown>
        refuseAbove: number | null
      }>,
    ) => {
      const now = clock.now()
      const outbox = batch.map(({ refuseAbove: _r, ...b }) => ({
        ...b,
        id: randomUUID(),
        channel: 'chat' as const,
        createdAt: now,
      }))
      return db.transaction(async (tx) => {
        const admitted = await admitThroughput(tx, batch, now)
        const kept = outbox.filter((_, at) => admitted[at])
        const ids = new Map<string, string[]>()
        for (const row of kept) ids.set(row.accountId, [...(ids.get(row.accountId) ?? []), `sandbox.${row.id}`])
        if (kept.length > 0) await tx.insert(sandboxOutbox).values(kept)
        await enqueue(
          tx,
          clock,
          // delivered after 1 s and read after 2 s, each rounded down to a step of STATUS_STEP_MS: a paced number's
          // messages leave a few at a time, and so their statuses come due together, one claim and transaction for a
          // tenth of a second's messages instead of one for each few (the Cloud API's webhooks also come in batches)
          [...ids].flatMap(([accountId, providerMessageIds]) =>
            (['delivered', 'read'] as const).map((status, i) => ({
              accountId,
              queue: SANDBOX_STATUS_QUEUE,
              payload: { providerMessageIds, status },
              runAt: new Date(Math.floor((now.getTime() + 1000 * (i + 1)) / STATUS_STEP_MS) * STATUS_STEP_MS),
            })),
          ),
        )
        return outbox.map((row, at) => (admitted[at] ? `sandbox.${row.id}` : null))
      })
    },
    // a paced number's messages leave a few at a time (a tick of its slots); the sandbox answers after
    // SANDBOX_GATHER_MS, as a provider across the network would, and keeps what came meanwhile in one transaction
    { gatherMs: SANDBOX_GATHER_MS },
  )

  /** Which messages of the batch the numbers' throughput admits (all, for a number not told to refuse). */
  async function admitThroughput(
    tx: Db,
    batch: Array<{ accountId: string; refuseAbove: number | null }>,
    now: Date,
  ): Promise<boolean[]> {
    const admitted = batch.map(() => true)
    const limited = new Map<string, number>()
    for (const b of batch) if (b.refuseAbove !== null) limited.set(b.accountId, b.refuseAbove)
    for (const [accountId, refuseAbove] of limited) {
      await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`herold_sandbox_rate:${accountId}`}, 0))`)
      const since = new Date(now.getTime() - 1000).toISOString()
      const [row] = rows<{ n: number }>(
        await tx.execute(sql`SELECT count(*)::int AS n FROM sandbox_outbox WHERE account_id = ${accountId}
          AND channel = 'chat' AND created_at > ${since}::timestamptz`),
      )
      let room = refuseAbove - Number(row?.n ?? 0)
      for (const [at, b] of batch.entries()) {
        if (b.accountId !== accountId) continue
        admitted[at] = room > 0
        room--
      }
    }
    return admitted
  }

  async function keep(c: ChatConnection, recipient: string, payload: Record<string, unknown>) {
    const providerMessageId = await keepAll({
      accountId: c.accountId,
      recipient,
      payload,
      refuseAbove: c.sandboxRefuseAbove,
    })
    if (providerMessageId === null) return refusal(130429, 'Rate limit hit: the number sent more than its throughput')
    return { ok: true as const, providerMessageId }
  }

  /** The template's sandbox status; the lookups of messages sent at the same time are one query per template. */
  const templateStatus = groupCommit(async (batch: Array<{ accountId: string; name: string; language: string }>) => {
    const keyOf = (t: { accountId: string; name: string; language: string }) =>
      JSON.stringify([t.accountId, t.name, t.language])
    const distinct = new Map(batch.map((t) => [keyOf(t), t]))
    const found = new Map<string, string | null>()
    for (const [key, t] of distinct) {
      const [row] = await db
        .select({ status: sandboxTemplates.status })
        .from(sandboxTemplates)
        .where(templateKey(t.accountId, t))
      found.set(key, row?.status ?? null)
    }
    return batch.map((t) => found.get(keyOf(t)) ?? null)
  })

  /** WhatsApp's messaging limit: a template to a customer not messaged in 24 hours needs room among them. */
  async function beyondDailyLimit(accountId: string, recipient: string, limit: number): Promise<boolean> {
    const since = new Date(clock.now().getTime() - SERVICE_WINDOW_MS).toISOString()
    const result = await db.execute(sql`SELECT count(DISTINCT recipient)::int AS started,
        bool_or(recipient = ${recipient}) AS known
      FROM sandbox_outbox WHERE account_id = ${accountId} AND channel = 'chat' AND created_at > ${since}::timestamptz
        AND payload->>'type' = 'template'`)
    const [row] = ((result as { rows?: unknown[] }).rows ?? result) as Array<{ started: number; known: boolean | null }>
    return !row?.known && Number(row?.started ?? 0) >= limit
  }

  /** Free text outside the 24-hour window: the Cloud API's refusal; null inside it. */
  async function outsideWindow(accountId: string, contactId: string) {
    if (insideServiceWindow(await deps.lastInboundAt(accountId, contactId), clock.now())) return null
    return refusal(131047, 'Re-engagement message: more than 24 hours have passed since the customer last replied')
  }

  const templateKey = (accountId: string, t: { name: string; language: string }) =>
    inAccount(sandboxTemplates, accountId, eq(sandboxTemplates.name, t.name), eq(sandboxTemplates.language, t.language))

  return {
    name: 'sandbox',
    async sendText(c, input) {
      const closed = await outsideWindow(c.accountId, input.contactId)
      if (closed) return closed
      return keep(c, input.to, { type: 'text', text: input.text, send_id: input.sendId })
    },
    async sendMedia(c, input) {
      const closed = await outsideWindow(c.accountId, input.contactId)
      if (closed) return closed
      return keep(c, input.to, {
        type: input.kind,
        ...(input.caption ? { caption: input.caption } : {}),
        media: { link: input.url, mime: input.mime, ...(input.filename ? { filename: input.filename } : {}) },
        send_id: input.sendId,
      })
    },
    async sendTemplate(c, input) {
      const status = await templateStatus({ accountId: c.accountId, name: input.name, language: input.language })
      if (status !== 'APPROVED') {
        return refusal(132001, 'Template name does not exist in the translation')
      }
      if (c.dailyLimit !== null && (await beyondDailyLimit(c.accountId, input.to, c.dailyLimit))) {
        return refusal(131048, 'Spam rate limit hit: the number reached its limit of new conversations in 24 hours')
      }
      return keep(c, input.to, {
        type: 'template',
        name: input.name,
        language: input.language,
        parameters: input.parameters,
        ...(input.parameterNames ? { parameter_names: input.parameterNames } : {}),
        ...(input.buttonParameters?.length ? { button_parameters: input.buttonParameters } : {}),
        ...(input.headerImageUrl ? { header_image: input.headerImageUrl } : {}),
        ...(input.text ? { text: input.text } : {}),
        send_id: input.sendId,
      })
    },
    async submitTemplate(c, template) {
      const decision = sandboxTemplateDecision(template)
      const row = {
        accountId: c.accountId,
        name: template.name,
        language: template.language,
        category: template.category,
        content: template.content,
        status: decision.status as 'APPROVED' | 'REJECTED',
        reason: decision.reason,
        createdAt: clock.now(),
      }
      await db
        .insert(sandboxTemplates)
        .values(row)
        .onConflictDoUpdate({
          target: [sandboxTemplates.accountId, sandboxTemplates.name, sandboxTemplates.language],
          set: { category: row.category, content: row.content, status: row.status, reason: row.reason },
        })
      return decision
    },
    async deleteTemplate(c, template) {
      await db.delete(sandboxTemplates).where(templateKey(c.accountId, template))
    },
    async readTemplate(c, template) {
      const [row] = await db.select().from(sandboxTemplates).where(templateKey(c.accountId, template))
      return row ? { status: row.status, reason: row.reason } : null
    },
    parseInbound(_c, request) {
      let body: SandboxInbound
      try {
        body = JSON.parse(request.rawBody.toString('utf8')) as SandboxInbound
      } catch {
        throw new InboundRejected(400, 'The body is not valid JSON')
      }
      return sandboxInboundBatch(body)
    },
    async fetchMedia() {
      throw new Error('the sandbox carries media inline')
    },
  }
}

/** e-mail `sandbox`: keeps every sent mail readable in sandbox_outbox instead of sending it. */
export function sandboxEmailProvider(deps: { db: Db; clock: Clock; accountId: string }): EmailProvider {
  return {
    name: 'sandbox',
    async send(message) {
      const id = randomUUID()
      await deps.db.insert(sandboxOutbox).values({
        accountId: deps.accountId,
        id,
        channel: 'email',
        recipient: message.to,
        payload: { ...message },
        createdAt: deps.clock.now(),
      })
      return { ok: true, providerMessageId: `<${id}@sandbox.herold>` }
    },
  }
}

export async function sandboxOutboxOf(db: Db, accountId: string, channel: 'chat' | 'email') {
  return db
    .select()
    .from(sandboxOutbox)
    .where(and(eq(sandboxOutbox.accountId, accountId), eq(sandboxOutbox.channel, channel)))
    .orderBy(sandboxOutbox.createdAt)
}
