// What the send benchmarks share (bench/accept.ts, bench/e2e.ts, bench/sends.ts): an account with a key on a plan
// without practical limits, a sandbox chat number at a pace, an approved template and confirmed contacts; and the
// queue filled the way POST /v1/messages fills it (its two writes, without the checks).
import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { recordOptinChange } from '../../src/modules/contacts/index.ts'
import { insertSends } from '../../src/modules/messaging/messaging.repository.ts'
import { TEMPLATE_SEND_QUEUE } from '../../src/modules/messaging/messaging.sends.ts'
import { createAccount, createApiKey, getAccount, setPlan } from '../../src/platform/auth/accounts.service.ts'
import { SCOPES } from '../../src/platform/auth/scopes.ts'
import { systemClock } from '../../src/platform/clock.ts'
import type { Db } from '../../src/platform/db/client.ts'
import { enqueue } from '../../src/platform/jobs/jobs.ts'
import type { buildServices } from '../../src/services.ts'

type Services = ReturnType<typeof buildServices>

export interface Sender {
  accountId: string
  account: Awaited<ReturnType<typeof getAccount>>
  /** an API key with every scope */
  key: string
  templateId: string
  contactIds: string[]
}

export interface SenderOptions {
  contacts: number
  /** the sandbox number's pace, messages a second (omitted: the connection's default) */
  pace?: number
  /** the sandbox refuses (130429) the number's messages beyond this many a second (adaptive pace); default never */
  refuseAbove?: number
  /** the plan's monthly messages (default: 100,000,000) */
  messagesPerMonth?: number
  /** the template's text; its variables other than the contact's come from the caller */
  content: string
  name?: string
}

const BATCH = 1_000

/** A plan, an account with a key, a sandbox number at the pace, an approved template, `contacts` confirmed contacts. */
export async function seedSender(db: Db, services: Services, options: SenderOptions): Promise<Sender> {
  const plan = `bench-${Date.now()}-${randomUUID().slice(0, 8)}`
  await setPlan(db, {
    name: plan,
    contactsLimit: options.contacts + 10,
    messagesPerMonth: options.messagesPerMonth ?? 100_000_000,
    webhooksLimit: 1,
    requestsPerMinute: 1_000_000,
  })
  const created = await createAccount(db, { name: 'bench', plan })
  const account = await getAccount(db, created.id)
  const tenant = { accountId: account.id, account }
  const { key } = await createApiKey(db, { accountId: account.id, name: 'bench', scopes: [...SCOPES] })
  await services.channels.connect(account.id, {
    channel: 'chat',
    provider: 'sandbox',
    ...(options.pace === undefined ? {} : { messagesPerSecond: options.pace }),
    ...(options.refuseAbove === undefined ? {} : { sandboxRefuseAbove: options.refuseAbove }),
  })
  const template = await services.templates.create(tenant, {
    name: options.name ?? 'Bench template',
    content: options.content,
    language: 'de',
  })
  await services.templates.submit(tenant, template.id)
  const contactIds: string[] = []
  for (let start = 0; start < options.contacts; start += BATCH) {
    const rows = Array.from({ length: Math.min(BATCH, options.contacts - start) }, (_, i) => ({
      id: randomUUID(),
      phone: `+4915${String(100_000_000 + start + i)}`,
      name: `Kunde ${start + i}`,
    }))
    await db.execute(sql`INSERT INTO contacts (account_id, id, name, phone, language, source, created_at)
      SELECT ${account.id}::uuid, r.id::uuid, r.name, r.phone, 'de', 'bench', now()
      FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(id text, name text, phone text)`)
    for (const row of rows) {
      await db.transaction((tx) =>
        recordOptinChange(tx, systemClock, {
          accountId: account.id,
          contactId: row.id,
          channel: 'chat',
          to: 'confirmed',
          source: 'bench',
        }),
      )
      contactIds.push(row.id)
    }
  }
  return { accountId: account.id, account, key, templateId: template.id, contactIds }
}

/**
 * `count` template sends queued with the two writes POST /v1/messages makes (messaging.repository insertSends and
 * platform enqueue), `perTransaction` a transaction, no checks; `variables(i)` are the i-th send's values.
 */
export async function queueSends(
  db: Db,
  sender: Sender,
  count: number,
  variables: (i: number) => Record<string, string>,
  perTransaction = BATCH,
  offset = 0,
): Promise<string[]> {
  const ids: string[] = []
  for (let start = 0; start < count; start += perTransaction) {
    const now = systemClock.now()
    const rows = Array.from({ length: Math.min(perTransaction, count - start) }, (_, i) => ({
      accountId: sender.accountId,
      id: randomUUID(),
      contactId: sender.contactIds[(offset + start + i) % sender.contactIds.length],
      templateId: sender.templateId,
      variables: variables(offset + start + i),
      status: 'queued' as const,
      createdAt: now,
      updatedAt: now,
    }))
    await db.transaction(async (tx) => {
      await insertSends(tx, rows)
      await enqueue(
        tx,
        systemClock,
        rows.map((row) => ({ accountId: sender.accountId, queue: TEMPLATE_SEND_QUEUE, payload: { send_id: row.id } })),
      )
    })
    ids.push(...rows.map((row) => row.id))
  }
  return ids
}
