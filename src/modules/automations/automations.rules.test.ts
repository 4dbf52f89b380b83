import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { calendarOccurrences } from './automations.calendar.ts'
import {
  applySafetyRules,
  branchTarget,
  conditionHolds,
  keywordMatches,
  nextTimeOfDay,
  type Step,
  stepProblems,
} from './automations.rules.ts'

const TEMPLATE = '3f0c9a9e-6f1a-4c55-9d61-1d2a4f7b8e01'
const send: Step = { type: 'send_template', template_id: TEMPLATE }
const text: Step = { type: 'send_text', text: 'Danke!' }
const wait = (hours: number): Step => ({ type: 'wait', duration: { hours } })

describe('safety rules', () => {
  test('a mailing-list intent gets an e-mail double opt-in step prepended, with a notice', () => {
    const { steps, notices, changes } = applySafetyRules('mailing_list', [{ type: 'add_tag', tag: 'liste' }])
    assert.deepEqual(steps[0], { type: 'double_optin', channel: 'email' })
    assert.deepEqual(changes, [{ kind: 'double_optin_prepended', channel: 'email' }])
    assert.equal(steps.length, 2)
    assert.equal(notices.length, 1)
    assert.match(notices[0], /double opt-in/)
  })

  test('a newsletter intent that already starts with a double opt-in is left alone', () => {
    const input: Step[] = [{ type: 'double_optin', channel: 'chat' }, send]
    assert.deepEqual(applySafetyRules('newsletter', input), { steps: input, notices: [], changes: [] })
  })

  test('messages at least 24 hours apart are cut off after the first such message', () => {
    const { steps, notices, changes } = applySafetyRules('transactional', [send, wait(24), text, wait(1), send])
    assert.deepEqual(steps, [send])
    assert.deepEqual(changes, [{ kind: 'followup_cut', kept_through: 0, removed_from: 1, removed_to: 4 }])
    assert.equal(notices.length, 1)
    assert.match(notices[0], /follow-up sequence/)
  })

  test('messages less than 24 hours apart stay', () => {
    const input: Step[] = [send, wait(23), text, { type: 'wait', until_time: '09:00' }, send]
    assert.deepEqual(applySafetyRules('service', input), { steps: input, notices: [], changes: [] })
  })

  test('branch targets beyond a cut become the end; a prepended step moves them by one', () => {
    const branch: Step = { type: 'branch', condition: { type: 'has_tag', tag: 'vip' }, then_goto: 2, else_goto: 4 }
    const cut = applySafetyRules('transactional', [send, branch, text, wait(30), send])
    assert.deepEqual(cut.steps[1], { ...branch, else_goto: 'end' })
    const early: Step = { type: 'branch', condition: { type: 'has_tag', tag: 'vip' }, then_goto: 1, else_goto: 2 }
    const moved = applySafetyRules('newsletter', [early, send, send])
    assert.deepEqual(moved.steps[1], { ...early, then_goto: 2, else_goto: 3 })
  })

  test('property: no two kept messages are 24 hours apart by certain waits, and kept steps are a prefix', () => {
    const step = fc.oneof(
      fc.constant(send),
      fc.constant(text),
      fc.integer({ min: 1, max: 72 }).map(wait),
      fc.constant<Step>({ type: 'add_tag', tag: 'x' }),
    )
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 12 }), (input) => {
        const { steps } = applySafetyRules('transactional', input)
        assert.deepEqual(steps, input.slice(0, steps.length))
        let since: number | null = null
        for (const s of steps) {
          if (s.type === 'wait' && s.duration && since !== null) since += s.duration.hours ?? 0
          if (s.type === 'send_template' || s.type === 'send_text') {
            assert.ok(since === null || since < 24)
            since = 0
          }
        }
      }),
    )
  })
})

describe('step checks', () => {
  test('a wait takes exactly one of duration or until_time; a branch only jumps forward', () => {
    assert.deepEqual(stepProblems([send]), [])
    assert.equal(stepProblems([{ type: 'wait' }]).length, 1)
    assert.equal(stepProblems([{ type: 'wait', duration: { hours: 1 }, until_time: '09:00' }]).length, 1)
    assert.equal(stepProblems([{ type: 'wait', duration: {} }]).length, 1)
    assert.equal(
      stepProblems([send, { type: 'branch', condition: { type: 'has_tag', tag: 'a' }, then_goto: 1 }]).length,
      1,
    )
    assert.equal(
      stepProblems([{ type: 'branch', condition: { type: 'has_tag', tag: 'a' }, else_goto: 7 }, send]).length,
      1,
    )
  })

  test('branch conditions: tag, opt-in state, a field of the trigger data', () => {
    const subject = { tags: ['vip'], optinChat: 'confirmed', optinEmail: 'none', data: { order: { total: 42 } } }
    assert.equal(conditionHolds({ type: 'has_tag', tag: 'vip' }, subject), true)
    assert.equal(conditionHolds({ type: 'optin', channel: 'email', state: 'confirmed' }, subject), false)
    assert.equal(conditionHolds({ type: 'field', field: 'order.total', equals: 42 }, subject), true)
    assert.equal(conditionHolds({ type: 'field', field: 'order.total', equals: '42' }, subject), true)
    assert.equal(conditionHolds({ type: 'field', field: 'order', equals: '[object Object]' }, subject), false)
    assert.equal(conditionHolds({ type: 'field', field: 'order.missing.deep', equals: null }, subject), false)
    const branch = {
      type: 'branch' as const,
      condition: { type: 'has_tag' as const, tag: 'vip' },
      else_goto: 'end' as const,
    }
    assert.equal(branchTarget(branch, 0, true), 1)
    assert.equal(branchTarget(branch, 0, false), null)
  })

  test('keywords match whole words in any case', () => {
    assert.equal(keywordMatches('Ich hätte gern einen TERMIN morgen', ['termin']), true)
    assert.equal(keywordMatches('Termine?', ['termin']), false)
    assert.equal(keywordMatches('bitte rückruf anfordern', ['Rückruf anfordern']), true)
  })
})

describe('wait until a time of day', () => {
  test('the next 09:00 in Berlin, across the change to summer time', () => {
    const cases = [
      ['2026-03-28T10:00:00Z', '2026-03-29T07:00:00.000Z'],
      ['2026-03-29T06:59:00Z', '2026-03-29T07:00:00.000Z'],
      ['2026-10-24T08:30:00Z', '2026-10-25T08:00:00.000Z'],
      // exactly the time of day: now, not tomorrow
      ['2026-03-29T07:00:00Z', '2026-03-29T07:00:00.000Z'],
    ]
    for (const [now, next] of cases) {
      assert.equal(nextTimeOfDay(new Date(now as string), '09:00', 'Europe/Berlin').toISOString(), next, `after ${now}`)
    }
  })

  test('property: the result is at or after now, within 25 hours, and shows HH:MM on the zone’s clock', () => {
    const zones = ['Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe', 'UTC']
    fc.assert(
      fc.property(
        fc.date({ min: new Date('2025-01-01'), max: new Date('2028-01-01'), noInvalidDate: true }),
        fc.integer({ min: 0, max: 23 }),
        fc.integer({ min: 0, max: 59 }),
        fc.constantFrom(...zones),
        (now, hour, minute, zone) => {
          const time = `${String(hour).padStart(2, '0')}:${String(minute).padStart(2, '0')}`
          const next = nextTimeOfDay(now, time, zone)
          assert.ok(next.getTime() >= now.getTime())
          assert.ok(next.getTime() - now.getTime() <= 25 * 3600_000)
          const shown = new Intl.DateTimeFormat('en-GB', {
            timeZone: zone,
            hour: '2-digit',
            minute: '2-digit',
            hourCycle: 'h23',
          }).format(next)
          // in a skipped hour (a DST gap) the time moves forward, never back
          if (shown !== time)
            assert.ok(shown > time || zone === 'Australia/Lord_Howe', `${shown} vs ${time} in ${zone}`)
        },
      ),
    )
  })
})

describe('calendar feeds', () => {
  const feed = `BEGIN:VCALENDAR\r
VERSION:2.0\r
PRODID:-//Test//EN\r
BEGIN:VEVENT\r
UID:termin-1@praxis\r
DTSTART:20261201T090000Z\r
DTEND:20261201T093000Z\r
SUMMARY:Kontrolle\r
ATTENDEE;CN=Erika Muster:mailto:erika@example.com\r
END:VEVENT\r
BEGIN:VEVENT\r
UID:termin-2@praxis\r
DTSTART:20261202T090000Z\r
SUMMARY:Anruf\r
DESCRIPTION:Rückruf unter +49 170 1234567\r
END:VEVENT\r
BEGIN:VEVENT\r
UID:weekly@praxis\r
DTSTART:20261201T100000Z\r
RRULE:FREQ=WEEKLY;COUNT=3\r
ATTENDEE:mailto:max@example.com\r
END:VEVENT\r
BEGIN:VEVENT\r
UID:past@praxis\r
DTSTART:20200101T090000Z\r
ATTENDEE:mailto:old@example.com\r
END:VEVENT\r
END:VCALENDAR\r
`
  test('events with an attendee e-mail or a phone in the description, recurring ones expanded, past ones left out', () => {
    const found = calendarOccurrences(feed, new Date('2026-11-23T00:00:00Z'), new Date('2027-01-01T00:00:00Z'))
    assert.deepEqual(
      found.map((o) => [o.uid, o.startsAt.toISOString(), o.email, o.phone]),
      [
        ['termin-1@praxis', '2026-12-01T09:00:00.000Z', 'erika@example.com', null],
        ['termin-2@praxis', '2026-12-02T09:00:00.000Z', null, '+491701234567'],
        ['weekly@praxis#2026-12-01T10:00:00.000Z', '2026-12-01T10:00:00.000Z', 'max@example.com', null],
        ['weekly@praxis#2026-12-08T10:00:00.000Z', '2026-12-08T10:00:00.000Z', 'max@example.com', null],
        ['weekly@praxis#2026-12-15T10:00:00.000Z', '2026-12-15T10:00:00.000Z', 'max@example.com', null],
      ],
    )
    assert.equal(found[0].name, 'Erika Muster')
  })

  test('text that is not iCalendar throws', () => {
    assert.throws(() => calendarOccurrences('<html>nope</html>', new Date(), new Date()))
  })
})
