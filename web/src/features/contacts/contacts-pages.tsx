import { keepPreviousData, useQuery } from '@tanstack/react-query'
import { Link } from '@tanstack/react-router'
import { useState } from 'react'
import { BackLink, ErrorText, Field, formatTime } from '../../ui/components.tsx'
import { contactLabel, formatPhone } from '../../ui/contact.tsx'
import { useDebounced } from '../../ui/hooks.ts'
import { useEnum, useI18n, useWords } from '../../ui/i18n.tsx'
import { Table } from '../../ui/table.tsx'
import { NewContactForm } from './contact-form.tsx'
import { ContactImport } from './contact-import.tsx'
import { type ConditionDraft, conditionsOf, FieldConditionsEditor, useConditionFields } from './field-conditions.tsx'
import { consentHistoryQuery, contactQuery, contactsQuery } from './queries.ts'
import { contactWords, historyWords } from './words.ts'

export function ContactsPage() {
  const w = useWords(contactWords)
  const [q, setQ] = useState('')
  const [limit, setLimit] = useState(50)
  const search = useDebounced(q.trim(), 200)
  const [drafts, setDrafts] = useState<ConditionDraft[]>([])
  // only complete conditions filter: a row being filled in changes nothing yet
  const { conditions } = conditionsOf(drafts, useConditionFields())
  const fields = useDebounced(conditions.length ? JSON.stringify(conditions) : '', 300)
  const contacts = useQuery({
    ...contactsQuery(search, limit, fields),
    placeholderData: keepPreviousData,
  })
  return (
    <main>
      <h1>{w.contacts}</h1>
      <NewContactForm />
      <ContactImport />
      <Field label={w.search}>
        <input
          type="search"
          value={q}
          onChange={(e) => {
            setQ(e.target.value)
            setLimit(50)
          }}
        />
      </Field>
      <FieldConditionsEditor
        drafts={drafts}
        onChange={(next) => {
          setDrafts(next)
          setLimit(50)
        }}
      />
      <ErrorText error={contacts.error} />
      <Table
        aria-busy={contacts.isFetching}
        rows={contacts.data?.contacts}
        rowKey={(contact) => contact.id}
        columns={[
          [
            w.name,
            (contact) => (
              <Link to="/contacts/$id" params={{ id: contact.id }}>
                {contactLabel(contact)}
              </Link>
            ),
          ],
          [w.email, (contact) => contact.email],
          [w.phone, (contact) => formatPhone(contact.phone)],
          [w.tags, (contact) => contact.tags.join(', ')],
        ]}
      />
      {contacts.data && contacts.data.contacts.length === 0 && (
        <p className="empty">{q ? w.noContacts : w.noContactsYet}</p>
      )}
      {contacts.data?.has_more && (
        <button type="button" onClick={() => setLimit((n) => Math.min(200, n + 50))} disabled={limit >= 200}>
          {w.more}
        </button>
      )}
    </main>
  )
}

export function ContactPage({ id }: { id: string }) {
  const { language } = useI18n()
  const w = useWords(contactWords)
  const say = useEnum()
  const contact = useQuery(contactQuery(id))
  const c = contact.data?.contact
  return (
    <main>
      <BackLink to="/contacts" label={w.back} />
      <ErrorText error={contact.error} />
      {c && (
        <>
          <h1>{contactLabel(c)}</h1>
          <dl className="details">
            <dt>{w.email}</dt>
            <dd>{c.email || '–'}</dd>
            <dt>{w.phone}</dt>
            <dd>{formatPhone(c.phone) || '–'}</dd>
            <dt>{w.tags}</dt>
            <dd>{c.tags.length ? c.tags.join(', ') : '–'}</dd>
            <dt>{w.optinChat}</dt>
            <dd>{say('optinState', c.optin_chat)}</dd>
            <dt>{w.optinEmail}</dt>
            <dd>{say('optinState', c.optin_email)}</dd>
            <dt>{w.source}</dt>
            <dd>{c.source}</dd>
            <dt>{w.created}</dt>
            <dd>{formatTime(c.created_at, language, '')}</dd>
          </dl>
          <ConsentHistory id={id} />
        </>
      )}
    </main>
  )
}

/** Every change of the contact's opt-ins, oldest first, with its source (GET /app/contacts/{id}/consent-history). */
function ConsentHistory({ id }: { id: string }) {
  const w = useWords(historyWords)
  const say = useEnum()
  const { language } = useI18n()
  const history = useQuery(consentHistoryQuery(id))
  const rows = history.data?.history ?? []
  return (
    <section>
      <h2>{w.title}</h2>
      <ErrorText error={history.error} />
      {history.isSuccess && rows.length === 0 && <p>{w.none}</p>}
      {rows.length > 0 && (
        <Table
          data-testid="consent-history"
          rows={rows}
          rowKey={(r) => `${r.recorded_at}-${r.channel}-${r.to}`}
          columns={[
            [w.when, (r) => formatTime(r.recorded_at, language, '')],
            [w.channel, (r) => say('channel', r.channel)],
            [w.change, (r) => `${say('optinState', r.from)} → ${say('optinState', r.to)}`],
            [w.source, (r) => r.source],
            [w.address, (r) => r.address ?? '–'],
          ]}
        />
      )}
    </section>
  )
}
