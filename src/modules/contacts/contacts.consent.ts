import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { emitSignals } from '../../platform/events/signals.ts'
import { notFound } from '../../platform/http/errors.ts'
import * as repo from './contacts.repository.ts'
import type { OptinState } from './contacts.rules.ts'

// What the consent flows of every module read and write of a contact, in the caller's transaction.

/**
 * The one way to change an opt-in, for every module (double opt-in, inbound STOP, …): changes the state and
 * appends a consent record in the caller's transaction. Returns false when the state already was `to`.
 */
export async function recordOptinChange(
  tx: Db,
  clock: Clock,
  input: {
    accountId: string
    contactId: string
    channel: 'chat' | 'email'
    to: OptinState
    source: string
    /** what proves the change: message id, IP and user agent of a form, link token id, provider code, … */
    evidence?: Record<string, unknown>
    /** change only from one of these states (a start keyword never lowers `confirmed`); otherwise false */
    onlyFrom?: readonly OptinState[]
  },
): Promise<boolean> {
  const row = await repo.findContact(tx, input.accountId, input.contactId, { lock: true })
  if (!row) throw notFound('contact')
  const from = input.channel === 'chat' ? row.optinChat : row.optinEmail
  if (from === input.to) return false
  if (input.onlyFrom && !input.onlyFrom.includes(from)) return false
  await repo.setOptin(tx, input.accountId, input.contactId, input.channel, input.to)
  await repo.insertConsentRecords(tx, [
    {
      accountId: input.accountId,
      contactId: input.contactId,
      channel: input.channel,
      fromState: from,
      toState: input.to,
      source: input.source,
      address: input.channel === 'chat' ? row.phone : row.email,
      evidence: input.evidence ?? {},
      recordedAt: clock.now(),
    },
  ])
  if (input.to === 'confirmed' || input.to === 'opted_out') {
    await emitSignals(tx, clock, [
      {
        accountId: input.accountId,
        name: input.to === 'confirmed' ? 'optin.confirmed' : 'optin.opted_out',
        contactId: input.contactId,
        data: { channel: input.channel },
      },
    ])
  }
  return true
}

/** A contact's addresses and opt-in states for the consent flows (locked with `lock`), or null. */
export async function consentSubject(tx: Db, accountId: string, contactId: string, options: { lock?: boolean } = {}) {
  const row = await repo.findContact(tx, accountId, contactId, options)
  if (!row) return null
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    phone: row.phone,
    language: row.language,
    optinChat: row.optinChat,
    optinEmail: row.optinEmail,
    /** custom field values by key (the opt-in confirmation may use them) */
    fields: row.fields,
  }
}

/** A contact's consent history, oldest first (for the audit view and tests). */
export async function consentHistory(db: Db, accountId: string, contactId: string) {
  return repo.consentRecordsOf(db, accountId, contactId)
}
