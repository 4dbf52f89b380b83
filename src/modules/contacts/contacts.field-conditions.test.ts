import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { sql } from 'drizzle-orm'
import { contactsHarnessPerFile, createContact } from '../../../test/helpers/contacts.ts'
import { defineFields, FIVE_FIELDS, setFieldValues, setTimezone } from '../../../test/helpers/fields.ts'
import { createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import { rows } from '../../platform/db/rows.ts'
import { AppError } from '../../platform/http/errors.ts'
import {
  assertFieldConditions,
  type FieldCondition,
  fieldConditionContext,
  fieldConditionProblems,
  fieldConditionsSql,
  monthDayRanges,
  parseFieldConditionsParam,
  todayIn,
} from './contacts.field-conditions.ts'
import type { FieldDefinition } from './contacts.fields-read.ts'

// Conditions on custom fields: each op of each type selects exactly the contacts it should, on the database the
// tests run on; the rules refuse what does not fit the account's definitions, naming the field and the rule.

let harness: Harness
contactsHarnessPerFile((created) => {
  harness = created
})

const definitions: FieldDefinition[] = FIVE_FIELDS.map((d) => ({
  key: d.key,
  label: d.key,
  type: d.type,
  options: d.options ?? null,
  defaultValue: null,
  maxLength: null,
}))

/** One account whose contacts are named by what their fields hold. */
async function seeded(values: Record<string, Record<string, unknown>>) {
  const account = await createTestAccount(harness)
  await defineFields(harness.database.orm, account.accountId)
  for (const [name, fields] of Object.entries(values)) {
    const contact = await createContact(account, { name, email: `${name}@example.com` })
    await setFieldValues(harness.database.orm, account.accountId, contact.id, fields)
  }
  return account
}

async function selected(account: TestAccount, conditions: FieldCondition[]): Promise<string[]> {
  const db = harness.database.orm
  const context = await fieldConditionContext(db, account.accountId, harness.clock.now())
  const result = await db.execute(sql`SELECT c.name FROM contacts c
    WHERE c.account_id = ${account.accountId} AND ${fieldConditionsSql(conditions, context)} ORDER BY c.name`)
  return rows<{ name: string }>(result).map((r) => r.name)
}

describe('field conditions select by value', () => {
  test('text: equals, not_equals (set and different), is_set, is_empty (absent or "")', async () => {
    const account = await seeded({
      a: { customer_no: 'K-1' },
      b: { customer_no: 'K-2' },
      c: { customer_no: '' },
      d: {},
    })
    assert.deepEqual(await selected(account, [{ field: 'customer_no', op: 'equals', value: 'K-1' }]), ['a'])
    assert.deepEqual(await selected(account, [{ field: 'customer_no', op: 'not_equals', value: 'K-1' }]), ['b', 'c'])
    assert.deepEqual(await selected(account, [{ field: 'customer_no', op: 'is_set' }]), ['a', 'b'])
    assert.deepEqual(await selected(account, [{ field: 'customer_no', op: 'is_empty' }]), ['c', 'd'])
  })

  test('number: equals (42 is 42.0), not_equals, is_set, is_empty, greater_than, less_than (strictly)', async () => {
    const account = await seeded({ a: { visits: 3 }, b: { visits: 42 }, c: { visits: 7.5 }, d: {} })
    assert.deepEqual(await selected(account, [{ field: 'visits', op: 'equals', value: 42.0 }]), ['b'])
    assert.deepEqual(await selected(account, [{ field: 'visits', op: 'not_equals', value: 42 }]), ['a', 'c'])
    assert.deepEqual(await selected(account, [{ field: 'visits', op: 'is_set' }]), ['a', 'b', 'c'])
    assert.deepEqual(await selected(account, [{ field: 'visits', op: 'is_empty' }]), ['d'])
    assert.deepEqual(await selected(account, [{ field: 'visits', op: 'greater_than', value: 7.5 }]), ['b'])
    assert.deepEqual(await selected(account, [{ field: 'visits', op: 'greater_than', value: 7 }]), ['b', 'c'])
    assert.deepEqual(await selected(account, [{ field: 'visits', op: 'less_than', value: 7.5 }]), ['a'])
    assert.deepEqual(await selected(account, [{ field: 'visits', op: 'less_than', value: -1 }]), [])
  })

  test('number: a stored value of another type (written around the API) is never greater or less; large exponents', async () => {
    const account = await seeded({ a: { visits: 200 }, text: { visits: '200' }, list: { visits: [200] }, d: {} })
    assert.deepEqual(await selected(account, [{ field: 'visits', op: 'greater_than', value: 150 }]), ['a'])
    assert.deepEqual(await selected(account, [{ field: 'visits', op: 'less_than', value: 1e21 }]), ['a'])
    assert.deepEqual(await selected(account, [{ field: 'visits', op: 'greater_than', value: -1e-7 }]), ['a'])
    // not_equals: set (whatever its type) and different
    assert.deepEqual(await selected(account, [{ field: 'visits', op: 'not_equals', value: 200 }]), ['list', 'text'])
  })

  test('boolean: equals, not_equals, is_set, is_empty', async () => {
    const account = await seeded({ a: { vip: true }, b: { vip: false }, c: {} })
    assert.deepEqual(await selected(account, [{ field: 'vip', op: 'equals', value: true }]), ['a'])
    assert.deepEqual(await selected(account, [{ field: 'vip', op: 'equals', value: false }]), ['b'])
    assert.deepEqual(await selected(account, [{ field: 'vip', op: 'not_equals', value: true }]), ['b'])
    assert.deepEqual(await selected(account, [{ field: 'vip', op: 'is_set' }]), ['a', 'b'])
    assert.deepEqual(await selected(account, [{ field: 'vip', op: 'is_empty' }]), ['c'])
  })

  test('choice: equals, not_equals, is_set, is_empty', async () => {
    const account = await seeded({ a: { level: 'gold' }, b: { level: 'silver' }, c: {} })
    assert.deepEqual(await selected(account, [{ field: 'level', op: 'equals', value: 'gold' }]), ['a'])
    assert.deepEqual(await selected(account, [{ field: 'level', op: 'not_equals', value: 'gold' }]), ['b'])
    assert.deepEqual(await selected(account, [{ field: 'level', op: 'is_set' }]), ['a', 'b'])
    assert.deepEqual(await selected(account, [{ field: 'level', op: 'is_empty' }]), ['c'])
  })

  test('date: equals, not_equals, is_set, is_empty, before, after (strictly), within_next_days (today in the account timezone)', async () => {
    harness.clock.set('2026-06-10T08:00:00Z')
    const account = await seeded({
      a: { birthday: '2026-06-09' },
      b: { birthday: '2026-06-10' },
      c: { birthday: '2026-06-17' },
      d: { birthday: '2026-06-18' },
      e: {},
    })
    const field = 'birthday'
    assert.deepEqual(await selected(account, [{ field, op: 'equals', value: '2026-06-10' }]), ['b'])
    assert.deepEqual(await selected(account, [{ field, op: 'not_equals', value: '2026-06-10' }]), ['a', 'c', 'd'])
    assert.deepEqual(await selected(account, [{ field, op: 'is_set' }]), ['a', 'b', 'c', 'd'])
    assert.deepEqual(await selected(account, [{ field, op: 'is_empty' }]), ['e'])
    assert.deepEqual(await selected(account, [{ field, op: 'before', value: '2026-06-10' }]), ['a'])
    assert.deepEqual(await selected(account, [{ field, op: 'after', value: '2026-06-17' }]), ['d'])
    assert.deepEqual(await selected(account, [{ field, op: 'within_next_days', days: 7 }]), ['b', 'c'])
    assert.deepEqual(await selected(account, [{ field, op: 'within_next_days', days: 0 }]), ['b'])
    // 23:30 UTC on 9 June is already 10 June in Berlin, still 9 June in New York
    harness.clock.set('2026-06-09T23:30:00Z')
    assert.deepEqual(await selected(account, [{ field, op: 'within_next_days', days: 0 }]), ['b'])
    await setTimezone(harness.database.orm, account.accountId, 'America/New_York')
    assert.deepEqual(await selected(account, [{ field, op: 'within_next_days', days: 0 }]), ['a'])
  })

  test('birthdays (ignore_year) within the next days across the year end, by the test clock', async () => {
    harness.clock.set('2026-12-28T10:00:00Z')
    const account = await seeded({
      dec27: { birthday: '1980-12-27' },
      dec28: { birthday: '1975-12-28' },
      dec31: { birthday: '2001-12-31' },
      jan01: { birthday: '1990-01-01' },
      jan04: { birthday: '1969-01-04' },
      jan05: { birthday: '1985-01-05' },
      none: {},
    })
    const birthdays = (days: number) =>
      selected(account, [{ field: 'birthday', op: 'within_next_days', days, ignore_year: true }])
    assert.deepEqual(await birthdays(7), ['dec28', 'dec31', 'jan01', 'jan04'])
    assert.deepEqual(await birthdays(0), ['dec28'])
    assert.deepEqual(await birthdays(366), ['dec27', 'dec28', 'dec31', 'jan01', 'jan04', 'jan05'])
    harness.clock.set('2027-01-03T10:00:00Z')
    assert.deepEqual(await birthdays(1), ['jan04'])
  })

  test('a birthday on 29 February counts on 28 February in a year without it', async () => {
    const account = await seeded({ leap: { birthday: '2000-02-29' }, mar1: { birthday: '1999-03-01' } })
    const birthdays = (days: number) =>
      selected(account, [{ field: 'birthday', op: 'within_next_days', days, ignore_year: true }])
    harness.clock.set('2027-02-28T10:00:00Z')
    assert.deepEqual(await birthdays(0), ['leap'])
    harness.clock.set('2028-02-28T10:00:00Z')
    assert.deepEqual(await birthdays(0), [])
    assert.deepEqual(await birthdays(1), ['leap'])
  })

  test('conditions combine with AND; a field deleted since selects nobody', async () => {
    const account = await seeded({ a: { level: 'gold', visits: 10 }, b: { level: 'gold', visits: 1 }, c: {} })
    assert.deepEqual(
      await selected(account, [
        { field: 'level', op: 'equals', value: 'gold' },
        { field: 'visits', op: 'greater_than', value: 5 },
      ]),
      ['a'],
    )
    await harness.database.orm.execute(
      sql`DELETE FROM contact_fields WHERE account_id = ${account.accountId} AND key = 'level'`,
    )
    assert.deepEqual(await selected(account, [{ field: 'level', op: 'is_empty' }]), [])
  })
})

describe('field condition rules', () => {
  const rule = (condition: FieldCondition) => fieldConditionProblems([condition], definitions)[0]?.rule ?? null

  test('an unknown field, an op that does not fit the type and a value that does not fit are named', () => {
    assert.equal(rule({ field: 'shoe_size', op: 'equals', value: '42' }), 'field_unknown')
    assert.equal(rule({ field: 'birthday', op: 'greater_than', value: '2026-01-01' }), 'op_not_for_type')
    assert.equal(rule({ field: 'customer_no', op: 'before', value: 'x' }), 'op_not_for_type')
    assert.equal(rule({ field: 'vip', op: 'less_than', value: 1 }), 'op_not_for_type')
    assert.equal(rule({ field: 'level', op: 'within_next_days', days: 3 }), 'op_not_for_type')
    assert.equal(rule({ field: 'level', op: 'equals', value: 'platinum' }), 'value_not_an_option')
    assert.equal(rule({ field: 'visits', op: 'greater_than', value: '5' }), 'value_type')
    assert.equal(rule({ field: 'birthday', op: 'before', value: '2026-02-30' }), 'value_type')
    assert.equal(rule({ field: 'vip', op: 'equals', value: 'yes' }), 'value_type')
    assert.equal(rule({ field: 'customer_no', op: 'equals', value: 42 }), 'value_type')
    assert.equal(rule({ field: 'customer_no', op: 'equals' }), 'value_required')
    assert.equal(rule({ field: 'customer_no', op: 'is_set', value: 'x' }), 'value_not_allowed')
    assert.equal(rule({ field: 'birthday', op: 'within_next_days' }), 'days_required')
    assert.equal(rule({ field: 'birthday', op: 'after', value: '2026-01-01', days: 3 }), 'days_not_allowed')
    assert.equal(
      rule({ field: 'birthday', op: 'equals', value: '2026-01-01', ignore_year: true }),
      'ignore_year_not_allowed',
    )
    assert.equal(rule({ field: 'birthday', op: 'within_next_days', days: 7, ignore_year: true }), null)
  })

  test('assertFieldConditions is a 400 field_condition_invalid with the field, the rule and every problem', () => {
    try {
      assertFieldConditions(
        [
          { field: 'level', op: 'equals', value: 'gold' },
          { field: 'visits', op: 'before', value: '2026-01-01' },
          { field: 'nope', op: 'is_set' },
        ],
        definitions,
        'segment.fields',
      )
      assert.fail('accepted')
    } catch (error) {
      assert.ok(error instanceof AppError)
      assert.equal(error.status, 400)
      assert.equal(error.key, 'field_condition_invalid')
      assert.equal(error.details.field, 'visits')
      assert.equal(error.details.rule, 'op_not_for_type')
      assert.match(error.message, /segment\.fields\[1\] \(visits\): before does not apply to a number field/)
      assert.match(error.message, /segment\.fields\[2\]: nope is not a custom field/)
      assert.equal((error.details.problems as unknown[]).length, 2)
    }
  })

  test('the query parameter is a JSON array checked for its shape, unknown keys named', () => {
    assert.deepEqual(parseFieldConditionsParam('[{"field":"vip","op":"equals","value":true}]'), [
      { field: 'vip', op: 'equals', value: true },
    ])
    const refused = (raw: string) => {
      try {
        parseFieldConditionsParam(raw)
        return null
      } catch (error) {
        return (error as AppError).message
      }
    }
    assert.match(refused('level=gold') ?? '', /query\.fields must be a JSON array/)
    assert.match(refused('{"field":"vip"}') ?? '', /must be a JSON array/)
    assert.match(
      refused('[{"field":"vip","op":"equals","valu":true}]') ?? '',
      /query\.fields\[0\] has an unknown field valu/,
    )
    assert.match(refused('[{"field":"vip","op":"like"}]') ?? '', /query\.fields\[0\]\.op must be one of/)
    assert.match(refused('[{"field":"b","op":"within_next_days","days":1.5}]') ?? '', /days must be a whole number/)
  })

  test('today is the calendar date in the timezone; month-day windows split at the year end', () => {
    assert.equal(todayIn(new Date('2026-12-31T23:30:00Z'), 'Europe/Berlin'), '2027-01-01')
    assert.equal(todayIn(new Date('2026-12-31T23:30:00Z'), 'America/New_York'), '2026-12-31')
    assert.deepEqual(monthDayRanges('2026-12-28', 7), [
      ['12-28', '12-31'],
      ['01-01', '01-04'],
    ])
    assert.deepEqual(monthDayRanges('2026-03-01', 3), [['03-01', '03-04']])
    assert.deepEqual(monthDayRanges('2027-02-27', 1), [['02-27', '02-29']])
    assert.equal(monthDayRanges('2026-05-05', 366), 'all')
  })
})
