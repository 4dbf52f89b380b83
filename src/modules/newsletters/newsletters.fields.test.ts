import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { defineFields, setFieldValues } from '../../../test/helpers/fields.ts'
import {
  drainJobs,
  sandboxAccount as fixtureAccount,
  phoneSequence,
  setOptin,
  signedInMember,
} from '../../../test/helpers/fixtures.ts'
import type { Harness, TestAccount } from '../../../test/helpers/harness.ts'
import { scheduleNewsletter } from '../../../test/helpers/newsletters.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'

// Newsletter segments by custom field (issue 33): the estimate, the preview's "would receive" and the fan-out select
// exactly the contacts whose fields match, AND with the tags; a condition that does not fit the account's fields is a
// 400 naming the field and the rule, and nothing is stored.

let harness: Harness
// jobs run only inside drain(), so a test sees each state between steps
harnessPerFile({ drainOnly: true }, (created) => {
  harness = created
})

const HOUR = 3600_000
// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>
const nextPhone = phoneSequence('+4915')

async function contact(
  account: TestAccount,
  name: string,
  fields: Record<string, unknown>,
  options: { confirmed?: boolean; tags?: string[] } = {},
): Promise<string> {
  const response = await account.request({ method: 'POST', url: '/v1/contacts', payload: { name, phone: nextPhone() } })
  assert.equal(response.statusCode, 201, response.body)
  const id = response.json().contact.id as string
  await setFieldValues(harness.database.orm, account.accountId, id, fields)
  if (options.confirmed !== false) {
    await setOptin(harness, account.accountId, id)
  }
  for (const tag of options.tags ?? []) {
    const added = await account.request({ method: 'POST', url: `/v1/contacts/${id}/tags`, payload: { tag } })
    assert.ok(added.statusCode < 300, added.body)
  }
  return id
}

async function draft(account: TestAccount): Promise<Json> {
  const response = await account.request({
    method: 'POST',
    url: '/v1/newsletters',
    payload: { subject: 'Zum Geburtstag', content: 'Hallo {{name}}, alles Gute!' },
  })
  assert.equal(response.statusCode, 201, response.body)
  return response.json().newsletter
}

const patchSegment = (account: TestAccount, id: string, segment: Json | null) =>
  account.request({ method: 'PATCH', url: `/v1/newsletters/${id}`, payload: { segment } })

/** An account with the five fields and six contacts: four confirmed with values, one confirmed without, one not. */
async function scene() {
  const account = await fixtureAccount(harness, { messagesPerMonth: 1000 })
  await defineFields(harness.database.orm, account.accountId)
  const ids = {
    gold: await contact(
      account,
      'Gold',
      { level: 'gold', visits: 12, birthday: '1980-01-02', vip: true },
      { tags: ['stamm'] },
    ),
    silver: await contact(
      account,
      'Silver',
      { level: 'silver', visits: 3, birthday: '1990-12-30' },
      { tags: ['stamm'] },
    ),
    bronze: await contact(account, 'Bronze', { level: 'bronze', visits: 40, customer_no: 'K-7' }),
    goldNew: await contact(account, 'Gold neu', { level: 'gold', visits: 1 }),
    empty: await contact(account, 'Leer', {}),
    unconfirmed: await contact(account, 'Ohne', { level: 'gold', visits: 99 }, { confirmed: false }),
  }
  return { account, ids }
}

describe('newsletter segments by custom field', () => {
  test('PATCH segment.fields: the estimate counts exactly the confirmed contacts that match, AND with the tags', async () => {
    harness.clock.set('2026-12-28T09:00:00Z')
    const { account } = await scene()
    const newsletter = await draft(account)
    const estimate = async (segment: Json) => {
      const response = await patchSegment(account, newsletter.id, segment)
      assert.equal(response.statusCode, 200, response.body)
      return response.json().newsletter.recipients_estimate as number
    }
    assert.equal(await estimate({ fields: [{ field: 'level', op: 'equals', value: 'gold' }] }), 2)
    assert.equal(await estimate({ fields: [{ field: 'visits', op: 'greater_than', value: 10 }] }), 2)
    assert.equal(
      await estimate({
        tags_any: ['stamm'],
        fields: [{ field: 'level', op: 'equals', value: 'gold' }],
      }),
      1,
    )
    assert.equal(
      await estimate({ fields: [{ field: 'birthday', op: 'within_next_days', days: 7, ignore_year: true }] }),
      2,
    )
    assert.equal(await estimate({ fields: [{ field: 'customer_no', op: 'is_empty' }] }), 4)
    assert.equal(await estimate({ fields: [{ field: 'vip', op: 'equals', value: true }] }), 1)
    const saved = (await account.request({ method: 'GET', url: `/v1/newsletters/${newsletter.id}` })).json()
    assert.deepEqual(saved.newsletter.segment, { fields: [{ field: 'vip', op: 'equals', value: true }] })
    assert.equal(saved.newsletter.recipients_estimate, 1)
  })

  test('an unknown field or an op that does not fit is a 400 naming the field and the rule; nothing is stored', async () => {
    const { account } = await scene()
    const newsletter = await draft(account)
    const kept = { fields: [{ field: 'level', op: 'equals', value: 'gold' }] }
    assert.equal((await patchSegment(account, newsletter.id, kept)).statusCode, 200)
    for (const [condition, field, rule] of [
      [{ field: 'shoe_size', op: 'is_set' }, 'shoe_size', 'field_unknown'],
      [{ field: 'birthday', op: 'greater_than', value: '2026-01-01' }, 'birthday', 'op_not_for_type'],
      [{ field: 'level', op: 'equals', value: 'platinum' }, 'level', 'value_not_an_option'],
      [{ field: 'visits', op: 'less_than', value: 'ten' }, 'visits', 'value_type'],
    ] as const) {
      const response = await patchSegment(account, newsletter.id, { fields: [condition] })
      assert.equal(response.statusCode, 400, response.body)
      const error = response.json().error
      assert.deepEqual(
        [error.code, error.key, error.field, error.rule],
        ['bad_request', 'field_condition_invalid', field, rule],
      )
      assert.match(error.message, new RegExp(`segment\\.fields\\[0\\].*${field}`))
    }
    const unknownKey = await patchSegment(account, newsletter.id, {
      fields: [{ field: 'level', op: 'is_set', mode: 1 }],
    })
    assert.equal(unknownKey.statusCode, 400)
    assert.match(unknownKey.json().error.message, /mode/)
    const saved = (await account.request({ method: 'GET', url: `/v1/newsletters/${newsletter.id}` })).json()
    assert.deepEqual(saved.newsletter.segment, kept)
  })

  test('POST /app/newsletters/estimate and the preview know the field conditions', async () => {
    const { account, ids } = await scene()
    const { headers } = await signedInMember(harness, {
      accountId: account.accountId,
      email: `fields-${process.pid}-${Date.now()}@example.org`,
      password: 'fields password 1',
      role: 'owner',
    })
    const estimate = (segment: Json | null) =>
      harness.app.inject({ method: 'POST', url: '/app/newsletters/estimate', headers, payload: { segment } })
    const counted = await estimate({ fields: [{ field: 'visits', op: 'less_than', value: 5 }] })
    assert.equal(counted.statusCode, 200, counted.body)
    assert.equal(counted.json().recipients_estimate, 2)
    const refused = await estimate({ fields: [{ field: 'vip', op: 'before', value: '2026-01-01' }] })
    assert.equal(refused.statusCode, 400)
    assert.deepEqual(
      [refused.json().error.key, refused.json().error.rule],
      ['field_condition_invalid', 'op_not_for_type'],
    )

    const newsletter = await draft(account)
    await patchSegment(account, newsletter.id, { fields: [{ field: 'level', op: 'equals', value: 'silver' }] })
    const preview = async (contactId: string) =>
      (
        await account.request({
          method: 'GET',
          url: `/v1/newsletters/${newsletter.id}/preview?contact_id=${contactId}`,
        })
      ).json()
    assert.deepEqual([(await preview(ids.silver)).would_receive, (await preview(ids.silver)).reason], [true, null])
    assert.deepEqual(
      [(await preview(ids.gold)).would_receive, (await preview(ids.gold)).reason],
      [false, 'not_in_segment'],
    )
  })

  test('the fan-out writes send records for exactly the matching contacts (birthdays by the clock at its time)', async () => {
    harness.clock.set('2026-12-27T09:00:00Z')
    const { account, ids } = await scene()
    const newsletter = await draft(account)
    const segment = {
      fields: [
        { field: 'birthday', op: 'within_next_days', days: 7, ignore_year: true },
        { field: 'level', op: 'not_equals', value: 'bronze' },
      ],
    }
    assert.equal((await patchSegment(account, newsletter.id, segment)).statusCode, 200)
    // scheduled for the 31st: then 30 December is past and 2 January within the week
    const at = new Date('2026-12-31T08:00:00Z')
    const scheduled = await scheduleNewsletter(account, newsletter.id, at.toISOString())
    assert.equal(scheduled.statusCode, 200, scheduled.body)
    harness.clock.set(new Date(at.getTime() + 1000))
    await drainJobs(harness)
    const sends = await harness.database.query<{ contact_id: string }>(
      `SELECT contact_id FROM template_sends WHERE account_id = $1 AND origin = 'newsletter' AND origin_id = $2`,
      [account.accountId, newsletter.id],
    )
    assert.deepEqual(
      sends.map((s) => s.contact_id),
      [ids.gold],
    )
    // while sending, the segment is locked as before
    const locked = await patchSegment(account, newsletter.id, { fields: [{ field: 'vip', op: 'is_set' }] })
    assert.equal(locked.statusCode, 400)
    assert.equal(locked.json().error.key, 'newsletter_locked')
    harness.clock.advance(HOUR)
  })
})
