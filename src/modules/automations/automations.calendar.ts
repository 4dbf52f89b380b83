import ICAL from 'ical.js'

/** One occurrence of a calendar event that can start a run: who attends and when it starts. */
export interface CalendarOccurrence {
  /** the event's UID, with the start for an occurrence of a recurring event */
  uid: string
  startsAt: Date
  summary: string
  email: string | null
  phone: string | null
  name: string | null
}

const MAX_OCCURRENCES_PER_EVENT = 200

function attendeeOf(event: ICAL.Event): Pick<CalendarOccurrence, 'email' | 'phone' | 'name'> {
  for (const attendee of event.attendees) {
    const value = String(attendee.getFirstValue() ?? '')
    const name = (attendee.getParameter('cn') as string | undefined) ?? null
    if (/^mailto:/i.test(value)) return { email: value.replace(/^mailto:/i, '').trim(), phone: null, name }
    if (/^tel:/i.test(value)) return { email: null, phone: value.replace(/^tel:/i, '').trim(), name }
  }
  // booking tools often put the customer's phone into the description
  const phone = (event.description ?? '').match(/(\+\d[\d\s/-]{6,}\d)/)?.[1] ?? null
  return { email: null, phone: phone ? phone.replace(/[\s/-]/g, '') : null, name: null }
}

/**
 * The occurrences of an iCalendar feed that start within (from, until], recurring events expanded. Throws on text
 * that is not iCalendar.
 */
export function calendarOccurrences(text: string, from: Date, until: Date): CalendarOccurrence[] {
  const root = new ICAL.Component(ICAL.parse(text))
  const occurrences: CalendarOccurrence[] = []
  for (const component of root.getAllSubcomponents('vevent')) {
    const event = new ICAL.Event(component)
    if (!event.uid || !event.startDate) continue
    if (String(component.getFirstPropertyValue('status') ?? '').toUpperCase() === 'CANCELLED') continue
    const who = attendeeOf(event)
    const base = { summary: event.summary ?? '', ...who }
    if (!event.isRecurring()) {
      const startsAt = event.startDate.toJSDate()
      if (startsAt > from && startsAt <= until) occurrences.push({ uid: event.uid, startsAt, ...base })
      continue
    }
    const iterator = event.iterator()
    for (let i = 0, next = iterator.next(); next && i < MAX_OCCURRENCES_PER_EVENT; i++, next = iterator.next()) {
      const startsAt = next.toJSDate()
      if (startsAt > until) break
      if (startsAt > from) occurrences.push({ uid: `${event.uid}#${startsAt.toISOString()}`, startsAt, ...base })
    }
  }
  return occurrences
}
