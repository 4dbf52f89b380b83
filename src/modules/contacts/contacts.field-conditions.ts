import { type SQL, sql } from 'drizzle-orm'
import { type Static, Type } from 'typebox'
import { getAccount } from '../../platform/auth/accounts.service.ts'
import type { Db } from '../../platform/db/client.ts'
import { rows } from '../../platform/db/rows.ts'
import { badRequest } from '../../platform/http/errors.ts'
import { type FieldDefinition, fieldDefinitionsOf } from './contacts.fields-read.ts'
import type { CustomFieldType, StoredFieldCondition } from './contacts.tables.ts'

/**
 * Conditions on custom fields (issue 33): one shape for newsletter segments, automation branches, the contact list
 * and the bulk operations, `{field, op, value?, days?, ignore_year?}`. The rules (which op fits which type) are pure;
 * the SQL is one builder over `contacts.fields`, so every audience selects the same contacts.
 */

export const FIELD_CONDITION_OPS = [
  'equals',
  'not_equals',
  'is_set',
  'is_empty',
  'before',
  'after',
  'within_next_days',
  'greater_than',
  'less_than',
] as const
export type FieldConditionOp = (typeof FIELD_CONDITION_OPS)[number]

export const MAX_FIELD_CONDITIONS = 20
export const MAX_CONDITION_DAYS = 366
const MAX_VALUE_LENGTH = 1024

const COMMON_OPS = ['equals', 'not_equals', 'is_set', 'is_empty'] as const
/** The ops each field type takes. */
export const OPS_BY_TYPE: Record<CustomFieldType, readonly FieldConditionOp[]> = {
  text: COMMON_OPS,
  choice: COMMON_OPS,
  boolean: COMMON_OPS,
  number: [...COMMON_OPS, 'greater_than', 'less_than'],
  date: [...COMMON_OPS, 'before', 'after', 'within_next_days'],
}

const NO_VALUE: readonly FieldConditionOp[] = ['is_set', 'is_empty', 'within_next_days']

export const FieldCondition = Type.Object(
  {
    field: Type.String({ minLength: 1, maxLength: 40, description: 'the key of one of the account’s custom fields' }),
    op: Type.Union(
      [
        Type.Literal('equals'),
        Type.Literal('not_equals'),
        Type.Literal('is_set'),
        Type.Literal('is_empty'),
        Type.Literal('before'),
        Type.Literal('after'),
        Type.Literal('within_next_days'),
        Type.Literal('greater_than'),
        Type.Literal('less_than'),
      ],
      {
        description:
          'every type: equals, not_equals (a value that is set and differs), is_set, is_empty (no value); date: before, after (strictly), within_next_days (today through today + days, in the account timezone); number: greater_than, less_than (strictly)',
      },
    ),
    // not a union of string, number and boolean: the request validator coerces types, and a union would take 10 as
    // "10" (the first branch); the rules check the value against the field's type instead
    value: Type.Optional(
      Type.Unsafe<string | number | boolean>({
        description:
          'as the field stores it: text and choice a string (choice: one of its options), number a number, date "YYYY-MM-DD", boolean true or false; not with is_set, is_empty, within_next_days',
      }),
    ),
    days: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_CONDITION_DAYS,
        description: 'within_next_days only: how many days ahead (0: today)',
      }),
    ),
    ignore_year: Type.Optional(
      Type.Boolean({
        description:
          'within_next_days only: compare month and day, the year ignored (birthdays, anniversaries; a 29 February counts on 28 February in other years)',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'A condition on a custom field of the contact, such as {"field": "level", "op": "equals", "value": "gold"}',
  },
)
export type FieldCondition = Static<typeof FieldCondition>
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
// the schema and the shape a segment stores are one (checked when the types are)
true satisfies Same<FieldCondition, StoredFieldCondition>

export const FieldConditions = Type.Array(FieldCondition, {
  maxItems: MAX_FIELD_CONDITIONS,
  description: `conditions on the contacts' custom fields, all of which must hold (AND); at most ${MAX_FIELD_CONDITIONS}`,
})

/** One reason a condition does not fit the account's fields: the field, the rule broken and a sentence. */
export interface FieldConditionProblem {
  index: number
  field: string
  rule: string
  message: string
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/

/** Whether a string is a calendar date YYYY-MM-DD. */
export function isDate(value: string): boolean {
  const match = DATE.exec(value)
  if (!match) return false
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])]
  const date = new Date(Date.UTC(year, month - 1, day))
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day
}

function valueProblem(definition: FieldDefinition, value: unknown): [string, string] | null {
  switch (definition.type) {
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? null : ['value_type', 'value must be a number']
    case 'boolean':
      return typeof value === 'boolean' ? null : ['value_type', 'value must be true or false']
    case 'date':
      return typeof value === 'string' && isDate(value) ? null : ['value_type', 'value must be a date YYYY-MM-DD']
    case 'choice': {
      const options = definition.options ?? []
      if (typeof value === 'string' && options.includes(value)) return null
      return ['value_not_an_option', `value must be one of ${options.join(', ')}`]
    }
    default:
      return typeof value === 'string' && value.length <= MAX_VALUE_LENGTH
        ? null
        : ['value_type', `value must be text of at most ${MAX_VALUE_LENGTH} characters`]
  }
}

/** What is wrong with one condition against its field's definition: [rule, sentence], or null when it fits. */
function conditionProblem(condition: FieldCondition, definition: FieldDefinition): [string, string] | null {
  const { op } = condition
  const allowed = OPS_BY_TYPE[definition.type]
  if (!allowed.includes(op)) {
    return ['op_not_for_type', `${op} does not apply to a ${definition.type} field (it takes ${allowed.join(', ')})`]
  }
  if (NO_VALUE.includes(op)) {
    if (condition.value !== undefined) return ['value_not_allowed', `${op} takes no value`]
  } else {
    if (condition.value === undefined) return ['value_required', `${op} needs a value`]
    const problem = valueProblem(definition, condition.value)
    if (problem) return problem
  }
  if (op === 'within_next_days') {
    if (condition.days === undefined)
      return ['days_required', `within_next_days needs days (0 to ${MAX_CONDITION_DAYS})`]
  } else {
    if (condition.days !== undefined) return ['days_not_allowed', 'days belongs to within_next_days only']
    if (condition.ignore_year !== undefined)
      return ['ignore_year_not_allowed', 'ignore_year belongs to within_next_days only']
  }
  return null
}

/** Every condition that does not fit the account's definitions, with the field and the rule (pure). */
export function fieldConditionProblems(
  conditions: readonly FieldCondition[],
  definitions: readonly FieldDefinition[],
  path = 'fields',
): FieldConditionProblem[] {
  const problems: FieldConditionProblem[] = []
  for (const [index, condition] of conditions.entries()) {
    const at = `${path}[${index}]`
    const definition = definitions.find((d) => d.key === condition.field)
    if (!definition) {
      problems.push({
        index,
        field: condition.field,
        rule: 'field_unknown',
        message: `${at}: ${condition.field} is not a custom field of this account`,
      })
      continue
    }
    const problem = conditionProblem(condition, definition)
    if (problem)
      problems.push({
        index,
        field: condition.field,
        rule: problem[0],
        message: `${at} (${condition.field}): ${problem[1]}`,
      })
  }
  return problems
}

/** 400 field_condition_invalid naming the field and the rule of every condition that does not fit (pure). */
export function assertFieldConditions(
  conditions: readonly FieldCondition[],
  definitions: readonly FieldDefinition[],
  path = 'fields',
): void {
  const problems = fieldConditionProblems(conditions, definitions, path)
  if (problems.length === 0) return
  throw badRequest(problems.map((p) => p.message).join('; '), 'field_condition_invalid', {
    field: problems[0].field,
    rule: problems[0].rule,
    problems,
  })
}

/** Checks conditions against the account's definitions as they are now (400 field_condition_invalid). */
export async function checkFieldConditions(
  db: Db,
  accountId: string,
  conditions: readonly FieldCondition[] | undefined,
  path = 'fields',
): Promise<void> {
  if (!conditions || conditions.length === 0) return
  assertFieldConditions(conditions, await fieldDefinitionsOf(db, accountId), path)
}

const PARAM_KEYS = new Set(['field', 'op', 'value', 'days', 'ignore_year'])

/**
 * The conditions of a query string parameter (a JSON array, as GET /v1/contacts?fields= takes them), checked for
 * their shape as the body schema checks it: a 400 naming the parameter, the condition and what is wrong.
 */
export function parseFieldConditionsParam(raw: string, path = 'query.fields'): FieldCondition[] {
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch {
    throw badRequest(
      `${path} must be a JSON array of conditions such as [{"field":"level","op":"equals","value":"gold"}]`,
    )
  }
  if (!Array.isArray(parsed)) throw badRequest(`${path} must be a JSON array of conditions`)
  if (parsed.length > MAX_FIELD_CONDITIONS) throw badRequest(`${path} holds at most ${MAX_FIELD_CONDITIONS} conditions`)
  return parsed.map((item, index) => {
    const at = `${path}[${index}]`
    if (item === null || typeof item !== 'object' || Array.isArray(item)) throw badRequest(`${at} must be an object`)
    const unknown = Object.keys(item).filter((key) => !PARAM_KEYS.has(key))
    if (unknown.length > 0) {
      throw badRequest(`${at} has an unknown field ${unknown.join(', ')}`, 'bad_request', {
        unknown_fields: unknown.map((key) => `${at}.${key}`),
      })
    }
    const c = item as Record<string, unknown>
    if (typeof c.field !== 'string' || c.field.length < 1 || c.field.length > 40) {
      throw badRequest(`${at}.field must be a field key (1 to 40 characters)`)
    }
    if (typeof c.op !== 'string' || !(FIELD_CONDITION_OPS as readonly string[]).includes(c.op)) {
      throw badRequest(`${at}.op must be one of ${FIELD_CONDITION_OPS.join(', ')}`)
    }
    const value = c.value
    if (
      value !== undefined &&
      !(typeof value === 'string' && value.length <= MAX_VALUE_LENGTH) &&
      !(typeof value === 'number' && Number.isFinite(value)) &&
      typeof value !== 'boolean'
    ) {
      throw badRequest(`${at}.value must be a string, a number or true/false`)
    }
    const days = c.days
    if (
      days !== undefined &&
      !(Number.isInteger(days) && (days as number) >= 0 && (days as number) <= MAX_CONDITION_DAYS)
    ) {
      throw badRequest(`${at}.days must be a whole number from 0 to ${MAX_CONDITION_DAYS}`)
    }
    if (c.ignore_year !== undefined && typeof c.ignore_year !== 'boolean') {
      throw badRequest(`${at}.ignore_year must be true or false`)
    }
    return c as FieldCondition
  })
}

// building an Intl.DateTimeFormat costs about 0.1 ms: one per timezone
const dayFormats = new Map<string, Intl.DateTimeFormat>()

/** The calendar date (`YYYY-MM-DD`) of an instant in an IANA timezone. */
export function todayIn(now: Date, timezone: string): string {
  let format = dayFormats.get(timezone)
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone: timezone, year: 'numeric', month: '2-digit', day: '2-digit' })
    dayFormats.set(timezone, format)
  }
  const parts = format.formatToParts(now)
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? ''
  return `${part('year')}-${part('month')}-${part('day')}`
}

/** A date YYYY-MM-DD plus whole days. */
export function addDays(date: string, days: number): string {
  const [year, month, day] = date.split('-').map(Number)
  return new Date(Date.UTC(year, month - 1, day + days)).toISOString().slice(0, 10)
}

const isLeapYear = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0

/**
 * The month-days (`MM-DD`) from today through today + days as ranges in month-day order (two when the window
 * crosses the year's end), or 'all' when the window holds every day of the year. 29 February counts on 28 February
 * of a year without it.
 */
export function monthDayRanges(today: string, days: number): Array<[string, string]> | 'all' {
  const seen: string[] = []
  for (let i = 0; i <= days; i++) {
    const date = addDays(today, i)
    const monthDay = date.slice(5)
    seen.push(monthDay)
    if (monthDay === '02-28' && !isLeapYear(Number(date.slice(0, 4)))) seen.push('02-29')
  }
  if (new Set(seen).size >= 366) return 'all'
  const wrap = seen.indexOf('01-01', 1)
  if (wrap <= 0) return [[seen[0], seen[seen.length - 1]]]
  return [
    [seen[0], '12-31'],
    ['01-01', seen[seen.length - 1]],
  ]
}

/** What the SQL of conditions needs besides them: the account's definitions and today in its timezone. */
export interface FieldConditionContext {
  definitions: readonly FieldDefinition[]
  /** YYYY-MM-DD in the account's timezone */
  today: string
}

/** The account's definitions and today (the injected clock's instant in the account's timezone). */
export async function fieldConditionContext(
  db: Db,
  accountId: string,
  now: Date,
  timezone?: string,
): Promise<FieldConditionContext> {
  const definitions = await fieldDefinitionsOf(db, accountId)
  const zone = timezone ?? (await getAccount(db, accountId)).timezone
  return { definitions, today: todayIn(now, zone) }
}

const json = (value: unknown) => sql`${JSON.stringify(value)}::jsonb`

/** `strict $."key" > 150` as a jsonpath parameter: the key is a field key (a-z0-9_), the value a finite number. */
function numberPath(key: string, op: '>' | '<', value: unknown): SQL {
  return sql`${`strict $.${JSON.stringify(key)} ${op} ${JSON.stringify(Number(value))}`}::jsonpath`
}

function conditionSql(condition: FieldCondition, context: FieldConditionContext, fields: SQL): SQL {
  const definition = context.definitions.find((d) => d.key === condition.field)
  // a field deleted, or changed so the condition no longer fits, since it was saved: the condition selects nobody
  if (!definition || conditionProblem(condition, definition)) return sql`FALSE`
  const key = condition.field
  const value = sql`(${fields} -> ${key}::text)`
  const text = sql`(${fields} ->> ${key}::text)`
  const isString = sql`jsonb_typeof(${value}) = 'string'`
  // containment: a GIN index on contacts.fields (jsonb_path_ops) serves it
  const contains = sql`${fields} @> ${json({ [key]: condition.value })}`
  // Each condition reads the row's jsonb once where it can: an operator on `fields` itself (@>, ?, @@) looks the key
  // up in place, while `fields -> key` builds a jsonb of the value first and a jsonb comparison then walks both sides
  // (measured on 1,000,000 contacts: docs/performance.md, "Custom fields in audiences").
  switch (condition.op) {
    case 'equals':
      return contains
    case 'not_equals':
      // `?`: the key is there (whatever its value), as `fields -> key IS NOT NULL`
      return sql`(${fields} ? ${key}::text AND NOT ${contains})`
    case 'is_set':
      return sql`COALESCE(${text}, '') <> ''`
    case 'is_empty':
      return sql`COALESCE(${text}, '') = ''`
    // one strict JSON-path comparison: a number compared with a number only (a value of another type, or an array, is
    // no match, as jsonb_typeof(...) = 'number' was); @@ answers NULL for that, so IS TRUE
    case 'greater_than':
      return sql`(${fields} @@ ${numberPath(key, '>', condition.value)} IS TRUE)`
    case 'less_than':
      return sql`(${fields} @@ ${numberPath(key, '<', condition.value)} IS TRUE)`
    // dates are YYYY-MM-DD: compared as text in code point order
    case 'before':
      return sql`(${isString} AND ${text} COLLATE "C" < ${String(condition.value)})`
    case 'after':
      return sql`(${isString} AND ${text} COLLATE "C" > ${String(condition.value)})`
    case 'within_next_days':
      return withinSql(condition, context.today, text, isString)
  }
}

function withinSql(condition: FieldCondition, today: string, text: SQL, isString: SQL): SQL {
  const days = condition.days ?? 0
  if (!condition.ignore_year) {
    return sql`(${isString} AND ${text} COLLATE "C" BETWEEN ${today} AND ${addDays(today, days)})`
  }
  const ranges = monthDayRanges(today, days)
  if (ranges === 'all') return sql`(${isString} AND ${text} <> '')`
  const monthDay = sql`substr(${text}, 6, 5) COLLATE "C"`
  const within = ranges.map(([from, to]) => sql`${monthDay} BETWEEN ${from} AND ${to}`)
  return sql`(${isString} AND (${sql.join(within, sql` OR `)}))`
}

/**
 * The conditions (all must hold) as SQL on the contacts row `alias`; TRUE without any. A condition that no longer
 * fits the account's definitions (its field deleted or changed since) is FALSE: it selects nobody rather than more.
 */
export function fieldConditionsSql(
  conditions: readonly FieldCondition[] | null | undefined,
  context: FieldConditionContext,
  alias = 'c',
): SQL {
  if (!conditions || conditions.length === 0) return sql`TRUE`
  const fields = sql`${sql.identifier(alias)}.fields`
  return sql`(${sql.join(
    conditions.map((condition) => conditionSql(condition, context, fields)),
    sql` AND `,
  )})`
}

/** Whether one contact meets the conditions now (automation branches); false when the contact is gone. */
export async function contactMeetsFieldConditions(
  db: Db,
  input: { accountId: string; contactId: string; conditions: readonly FieldCondition[]; now: Date; timezone: string },
): Promise<boolean> {
  const context = await fieldConditionContext(db, input.accountId, input.now, input.timezone)
  const result = await db.execute(sql`SELECT ${fieldConditionsSql(input.conditions, context)} AS holds
    FROM contacts c WHERE c.account_id = ${input.accountId} AND c.id = ${input.contactId}`)
  const [row] = rows<{ holds: unknown }>(result)
  return row?.holds === true || row?.holds === 't'
}
