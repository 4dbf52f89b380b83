import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { emitSignals, type Signal } from '../../platform/events/signals.ts'
import * as repo from './contacts.repository.ts'
import { type ContactTag, displayTags, isSystemTagName, planTagAddition, type TagOrigin } from './contacts.rules.ts'

// A contact as automation steps see and change it, in the step's transaction (the API's limits on tags).

/**
 * A contact as an automation step sees it, inside the step's transaction (locked with `lock`): opt-in states and the
 * tags shown. Null when the contact is gone.
 */
export async function contactForAutomation(tx: Db, accountId: string, contactId: string, options: { lock?: boolean }) {
  const row = await repo.findContact(tx, accountId, contactId, options)
  if (!row) return null
  const tags = displayTags(await repo.tagsOf(tx, accountId, [contactId])).map((t) => t.name)
  return { id: row.id, phone: row.phone, email: row.email, optinChat: row.optinChat, optinEmail: row.optinEmail, tags }
}

/**
 * Adds or removes one tag in the caller's transaction (automation steps), with the same limits as the API: never a
 * system tag, at most 30 tags. Adding signals `tag.added`. Returns whether anything changed, or the refusal.
 */
export async function changeContactTag(
  tx: Db,
  clock: Clock,
  input: {
    accountId: string
    contactId: string
    tag: string
    change: 'add' | 'remove'
    /** `ki` for the built-in AI's suggestions; default `manuell` */
    origin?: 'manuell' | 'ki'
  },
): Promise<{ changed: boolean; refused: string | null }> {
  if (isSystemTagName(input.tag)) return { changed: false, refused: 'system_tag' }
  const existing = await repo.tagsOf(tx, input.accountId, [input.contactId])
  if (input.change === 'remove') {
    return { changed: (await repo.deleteTag(tx, input.accountId, input.contactId, input.tag)) > 0, refused: null }
  }
  const origin = input.origin ?? 'manuell'
  // the AI's origin is stored beside a manual one of the same name (ki is shown over manuell), never over system
  if (origin === 'ki' && existing.some((t) => t.name === input.tag)) {
    if (existing.some((t) => t.name === input.tag && (t.origin === 'ki' || t.origin === 'system'))) {
      return { changed: false, refused: null }
    }
    await repo.insertTags(tx, [{ accountId: input.accountId, contactId: input.contactId, name: input.tag, origin }])
    return { changed: true, refused: null }
  }
  const plan = planTagAddition(
    displayTags(existing).map((t) => t.name),
    [input.tag],
  )
  if (plan.added.length === 0) {
    return { changed: false, refused: existing.some((t) => t.name === input.tag) ? null : 'tag_limit' }
  }
  await repo.insertTags(tx, [{ accountId: input.accountId, contactId: input.contactId, name: input.tag, origin }])
  await emitSignals(tx, clock, [
    { accountId: input.accountId, name: 'tag.added', contactId: input.contactId, data: { tag: input.tag } },
  ])
  return { changed: true, refused: null }
}

/** A contact as a batch of automation steps sees it (contactsForAutomation). */
export type AutomationContact = NonNullable<Awaited<ReturnType<typeof contactForAutomation>>>

/**
 * contactForAutomation for many contacts of an account at once (a batch of automation steps): two statements, the
 * contacts locked in id order with `lock`. Contacts that are gone are missing from the map.
 */
export async function contactsForAutomation(
  tx: Db,
  accountId: string,
  contactIds: string[],
  options: { lock?: boolean },
): Promise<Map<string, AutomationContact>> {
  const ids = [...new Set(contactIds)]
  if (ids.length === 0) return new Map()
  const found = await repo.findContacts(tx, accountId, ids, options)
  const tags = await repo.tagsOf(
    tx,
    accountId,
    found.map((row) => row.id),
  )
  const tagsOf = new Map<string, ContactTag[]>()
  for (const tag of tags) tagsOf.set(tag.contactId, [...(tagsOf.get(tag.contactId) ?? []), tag])
  return new Map(
    found.map((row) => [
      row.id,
      {
        id: row.id,
        phone: row.phone,
        email: row.email,
        optinChat: row.optinChat,
        optinEmail: row.optinEmail,
        tags: displayTags(tagsOf.get(row.id) ?? []).map((t) => t.name),
      },
    ]),
  )
}

/**
 * changeContactTag (origin `manuell`) for many changes of an account at once, in the caller's transaction: each
 * change is decided in order, as if made one after another (two changes of one contact see each other), and the
 * batch is written with one read, one delete, one insert and the `tag.added` signals together. Results in the order
 * of `changes`.
 */
export async function changeContactTags(
  tx: Db,
  clock: Clock,
  accountId: string,
  changes: Array<{ contactId: string; tag: string; change: 'add' | 'remove' }>,
): Promise<Array<{ changed: boolean; refused: string | null }>> {
  const contactIds = [...new Set(changes.filter((c) => !isSystemTagName(c.tag)).map((c) => c.contactId))]
  const rowsOf = new Map<string, ContactTag[]>(contactIds.map((id) => [id, []]))
  for (const tag of await repo.tagsOf(tx, accountId, contactIds)) rowsOf.get(tag.contactId)?.push(tag)
  const removed: Array<{ contact_id: string; name: string }> = []
  const added: Array<{ accountId: string; contactId: string; name: string; origin: TagOrigin }> = []
  const signals: Signal[] = []
  const results = changes.map((c) => {
    if (isSystemTagName(c.tag)) return { changed: false, refused: 'system_tag' }
    const current = rowsOf.get(c.contactId) ?? []
    if (c.change === 'remove') {
      const kept = current.filter((t) => t.name !== c.tag || t.origin === 'system')
      if (kept.length === current.length) return { changed: false, refused: null }
      rowsOf.set(c.contactId, kept)
      removed.push({ contact_id: c.contactId, name: c.tag })
      const pending = added.findIndex((a) => a.contactId === c.contactId && a.name === c.tag)
      if (pending >= 0) added.splice(pending, 1)
      return { changed: true, refused: null }
    }
    const plan = planTagAddition(
      displayTags(current).map((t) => t.name),
      [c.tag],
    )
    if (plan.added.length === 0) {
      return { changed: false, refused: current.some((t) => t.name === c.tag) ? null : 'tag_limit' }
    }
    rowsOf.set(c.contactId, [...current, { name: c.tag, origin: 'manuell' }])
    added.push({ accountId, contactId: c.contactId, name: c.tag, origin: 'manuell' })
    signals.push({ accountId, name: 'tag.added', contactId: c.contactId, data: { tag: c.tag } })
    return { changed: true, refused: null }
  })
  // removals first: a tag removed and added again in the batch is inserted after its delete
  await repo.deleteTagsOf(tx, accountId, removed)
  await repo.insertTags(tx, added)
  if (signals.length > 0) await emitSignals(tx, clock, signals)
  return results
}
