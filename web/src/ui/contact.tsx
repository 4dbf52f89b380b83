import { useQuery } from '@tanstack/react-query'
import { Link } from '@tanstack/react-router'
import { parsePhoneNumberFromString } from 'libphonenumber-js/min'
import { app } from '../api/client.ts'
import { apiQuery } from './query.ts'

/** What a list knows of a contact: enough to name it. */
export interface ContactNaming {
  id: string
  name?: string
  phone?: string
  email?: string
}

/** A phone number as people write it: "+49 151 23456789" (international format); unparsable ones as they are. */
export function formatPhone(phone: string): string {
  if (!phone) return ''
  return parsePhoneNumberFromString(phone)?.formatInternational() ?? phone
}

/** The contact's name, else its phone as people write it, else its e-mail; never an id ('' when none is known). */
export function contactLabel(contact: Omit<ContactNaming, 'id'>): string {
  return contact.name?.trim() || formatPhone(contact.phone ?? '') || contact.email || ''
}

/** A contact named as contactLabel does, linked to its page; `unknown` when the contact is gone. */
export function ContactLink({ contact, unknown }: { contact: ContactNaming | undefined; unknown: string }) {
  if (!contact) return <span>{unknown}</span>
  return (
    <Link to="/contacts/$id" params={{ id: contact.id }}>
      {contactLabel(contact) || unknown}
    </Link>
  )
}

/** Name, phone and e-mail of the contacts of a list (GET /app/contacts/labels, at most 100 ids at a time). */
export function useContactLabels(ids: ReadonlyArray<string | null | undefined>): Map<string, ContactNaming> {
  const wanted = [...new Set(ids.filter((id): id is string => !!id))].sort().slice(0, 100)
  const labels = useQuery({
    ...apiQuery(['contact-labels', wanted.join(',')], () =>
      app.GET('/app/contacts/labels', { params: { query: { ids: wanted.join(',') } } }),
    ),
    enabled: wanted.length > 0,
    staleTime: 60_000,
  })
  return new Map((labels.data?.contacts ?? []).map((c) => [c.id, c]))
}
