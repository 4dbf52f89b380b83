import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { Link, useNavigate } from '@tanstack/react-router'
import { useEffect, useState } from 'react'
import { call, v1 } from '../../api/client.ts'
import { BarChart, ProgressBar } from '../../ui/charts.tsx'
import { BackLink, ErrorText, Field, handleSubmit, TextField } from '../../ui/components.tsx'
import { ContactLink, contactLabel, useContactLabels } from '../../ui/contact.tsx'
import { fill, useEnum, useI18n, useWords } from '../../ui/i18n.tsx'
import type { SessionShape } from '../../ui/session.ts'
import { Table } from '../../ui/table.tsx'
import { dateInZone, formatInZone, zonedToIso } from '../../ui/time.ts'
import {
  type ConditionDraft,
  conditionsOf,
  draftOf,
  type FieldCondition,
  FieldConditionsEditor,
  useConditionFields,
} from '../contacts/field-conditions.tsx'
import { contactPreviewQuery, tagsQuery } from '../contacts/queries.ts'
import { imagesQuery } from '../media/queries.ts'
import { contactFieldsQuery } from '../settings/custom-fields.tsx'
import { type PreviewContactValues, previewText } from './preview.ts'
import {
  type NewsletterData,
  newsletterQuery,
  newsletterRecipientsQuery,
  newsletterStatusQuery,
  newslettersQuery,
} from './queries.ts'
import { words } from './words.ts'

type Words = typeof words.en

function statusWord(w: Words, status: string): string {
  return (
    (
      { draft: w.draft, scheduled: w.scheduled, sending: w.sendingStatus, sent: w.sentStatus } as Record<string, string>
    )[status] ?? status
  )
}

/** A contact chosen for the preview: search as you type, pick one. */
function PreviewContact({
  value,
  onChange,
}: {
  value: string
  onChange: (contact: (PreviewContactValues & { id: string }) | null) => void
}) {
  const w = useWords(words)
  const contacts = useQuery(contactPreviewQuery)
  const list = contacts.data?.contacts ?? []
  return (
    <Field label={w.previewFor}>
      <select
        value={value}
        onChange={(e) => {
          const c = list.find((x) => x.id === e.target.value)
          onChange(
            c
              ? {
                  id: c.id,
                  name: c.name ?? '',
                  email: c.email ?? null,
                  phone: c.phone ?? null,
                  language: c.language ?? null,
                  fields: c.fields ?? null,
                }
              : null,
          )
        }}
      >
        <option value="">{w.anyone}</option>
        {list.map((c) => (
          <option key={c.id} value={c.id}>
            {contactLabel(c)}
          </option>
        ))}
      </select>
    </Field>
  )
}

/**
 * The text as the chosen contact (or anyone) would read it: the contact variables and the account's custom fields
 * filled as the server fills them (a field the contact has no value for shows its default, else its label).
 */
function Preview({ subject, content }: { subject: string; content: string }) {
  const w = useWords(words)
  const { language } = useI18n()
  const [contact, setContact] = useState<(PreviewContactValues & { id: string }) | null>(null)
  const fields = useQuery(contactFieldsQuery).data?.contact_fields ?? []
  return (
    <section aria-label={w.preview}>
      <PreviewContact value={contact?.id ?? ''} onChange={setContact} />
      <div className="bubble" data-testid="preview">
        <strong>{previewText(subject, contact, w.fallback, fields, language)}</strong>
        <p>{previewText(content, contact, w.fallback, fields, language)}</p>
      </div>
    </section>
  )
}

export function NewslettersPage() {
  const w = useWords(words)
  const { language } = useI18n()
  const navigate = useNavigate()
  const [name, setName] = useState('')
  const [subject, setSubject] = useState('')
  const [content, setContent] = useState('')
  const list = useQuery(newslettersQuery)
  const create = useMutation({
    mutationFn: () =>
      call(
        v1.POST('/v1/newsletters', {
          body: { subject, content, ...(name.trim() ? { name: name.trim() } : {}) },
        }),
      ),
    onSuccess: (data) => void navigate({ to: '/newsletters/$id', params: { id: data.newsletter.id } }),
  })
  return (
    <main>
      <h1>{w.title}</h1>
      <ErrorText error={list.error} />
      {list.data && list.data.newsletters.length === 0 && <p className="empty">{w.none}</p>}
      {list.data && list.data.newsletters.length > 0 && (
        <Table
          rows={list.data.newsletters}
          rowKey={(n) => n.id}
          columns={[
            [
              w.subject,
              (n) => (
                <Link to="/newsletters/$id" params={{ id: n.id }}>
                  {n.name || n.subject}
                </Link>
              ),
            ],
            [w.status, (n) => statusWord(w, n.status)],
            [w.scheduledAt, (n) => (n.scheduled_at ? new Date(n.scheduled_at).toLocaleString(language) : '–')],
          ]}
        />
      )}
      <h2>{w.compose}</h2>
      <form onSubmit={handleSubmit(() => create.mutate())}>
        <TextField label={w.name} value={name} maxLength={200} onChange={setName} />
        <TextField label={w.subject} value={subject} maxLength={200} required onChange={setSubject} />
        <Field label={w.content}>
          <textarea value={content} rows={6} required onChange={(e) => setContent(e.target.value)} />
        </Field>
        <Preview subject={subject} content={content} />
        <ErrorText error={create.error} />
        <button type="submit" disabled={create.isPending}>
          {w.create}
        </button>
      </form>
    </main>
  )
}

/** Comma-separated tags as a list. */
const tagList = (text: string) =>
  text
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean)

function TagInput({
  label,
  value,
  onChange,
  known,
}: {
  label: string
  value: string
  onChange: (v: string) => void
  known: string
}) {
  return <TextField label={label} value={value} list={known} onChange={onChange} />
}

type SavedCondition = Omit<FieldCondition, 'value'> & { value?: unknown }
type SegmentShape = {
  tags_any?: string[]
  tags_all?: string[]
  tags_exclude?: string[]
  fields?: SavedCondition[]
} | null

/** A segment as the builder writes it: empty lists left out, nothing at all as null. */
function normalized(segment: SegmentShape): SegmentShape {
  if (!segment) return null
  const s: NonNullable<SegmentShape> = {}
  if (segment.tags_any?.length) s.tags_any = segment.tags_any
  if (segment.tags_all?.length) s.tags_all = segment.tags_all
  if (segment.tags_exclude?.length) s.tags_exclude = segment.tags_exclude
  if (segment.fields?.length) s.fields = segment.fields
  return Object.keys(s).length ? s : null
}

function SegmentBuilder({ id, segment, editable }: { id: string; segment: SegmentShape; editable: boolean }) {
  const w = useWords(words)
  const queryClient = useQueryClient()
  const [any, setAny] = useState((segment?.tags_any ?? []).join(', '))
  const [all, setAll] = useState((segment?.tags_all ?? []).join(', '))
  const [exclude, setExclude] = useState((segment?.tags_exclude ?? []).join(', '))
  const [drafts, setDrafts] = useState<ConditionDraft[]>((segment?.fields ?? []).map(draftOf))
  const fieldInfo = useConditionFields()
  const { conditions, complete } = conditionsOf(drafts, fieldInfo)
  const tags = useQuery(tagsQuery)
  const body = () => {
    const s: { tags_any?: string[]; tags_all?: string[]; tags_exclude?: string[]; fields?: FieldCondition[] } = {}
    if (tagList(any).length) s.tags_any = tagList(any)
    if (tagList(all).length) s.tags_all = tagList(all)
    if (tagList(exclude).length) s.tags_exclude = tagList(exclude)
    if (conditions.length) s.fields = conditions
    return Object.keys(s).length ? s : null
  }
  const save = useMutation({
    mutationFn: () => call(v1.PATCH('/v1/newsletters/{id}', { params: { path: { id } }, body: { segment: body() } })),
    onSuccess: (data) => queryClient.setQueryData(newsletterQuery(id).queryKey, data),
  })
  // the estimate follows the builder: once typing pauses, every tag is one the account has and every field condition
  // is complete, the segment is saved (a tag the list does not know waits for the button, whose refusal names it)
  const known = new Set(tags.data?.tags.map((t) => t.name) ?? [])
  const wanted = JSON.stringify(body())
  const saved = JSON.stringify(normalized(segment))
  const allKnown = [...tagList(any), ...tagList(all), ...tagList(exclude)].every((t) => known.has(t))
  const { mutate, isPending } = save
  const ready = tags.data !== undefined && (drafts.length === 0 || fieldInfo.length > 0)
  useEffect(() => {
    if (!editable || wanted === saved || !allKnown || !complete || !ready) return
    const timer = setTimeout(() => mutate(), 600)
    return () => clearTimeout(timer)
  }, [editable, wanted, saved, allKnown, complete, ready, mutate])
  const listId = `tags-${id}`
  return (
    <section>
      <h2>{w.segment}</h2>
      <p>{w.segmentIntro}</p>
      <datalist id={listId}>
        {tags.data?.tags.map((t) => (
          <option key={t.name} value={t.name} />
        ))}
      </datalist>
      <form onSubmit={handleSubmit(() => save.mutate())}>
        <fieldset disabled={!editable}>
          <TagInput label={w.tagsAny} value={any} onChange={setAny} known={listId} />
          <TagInput label={w.tagsAll} value={all} onChange={setAll} known={listId} />
          <TagInput label={w.tagsExclude} value={exclude} onChange={setExclude} known={listId} />
          <FieldConditionsEditor drafts={drafts} onChange={setDrafts} />
          <ErrorText error={save.error} />
          <button type="submit" disabled={isPending}>
            {w.saveSegment}
          </button>
        </fieldset>
      </form>
    </section>
  )
}

function CtaEditor({
  id,
  cta,
  editable,
  tracking,
}: {
  id: string
  cta: { text: string; url: string } | null
  editable: boolean
  tracking: string | null
}) {
  const w = useWords(words)
  const trackingNote =
    tracking === 'tracked'
      ? w.ctaTracked
      : tracking === 'public_url_not_https'
        ? w.ctaNotHttps
        : tracking === 'content_numbered_variables'
          ? w.ctaNumbered
          : null
  const queryClient = useQueryClient()
  const [text, setText] = useState(cta?.text ?? '')
  const [url, setUrl] = useState(cta?.url ?? '')
  const save = useMutation({
    mutationFn: (value: { text: string; url: string } | null) =>
      call(v1.PATCH('/v1/newsletters/{id}', { params: { path: { id } }, body: { cta: value } })),
    onSuccess: (data) => queryClient.setQueryData(newsletterQuery(id).queryKey, data),
  })
  return (
    <section>
      <h2>{w.cta}</h2>
      <form onSubmit={handleSubmit(() => save.mutate({ text, url }))}>
        <fieldset disabled={!editable}>
          <TextField label={w.ctaText} value={text} maxLength={200} required onChange={setText} />
          <TextField label={w.ctaUrl} type="url" value={url} required onChange={setUrl} />
          <ErrorText error={save.error} />
          <button type="submit" disabled={save.isPending}>
            {w.saveCta}
          </button>{' '}
          {cta && (
            <button type="button" onClick={() => save.mutate(null)}>
              {w.removeCta}
            </button>
          )}
        </fieldset>
      </form>
      {trackingNote && <p className="note">{trackingNote}</p>}
    </section>
  )
}

/** The header image: one of the media library's images, or none. */
function HeaderImage({
  id,
  current,
  editable,
}: {
  id: string
  current: { media_id?: string; url: string } | null
  editable: boolean
}) {
  const w = useWords(words)
  const queryClient = useQueryClient()
  const images = useQuery(imagesQuery)
  const [chosen, setChosen] = useState(current?.media_id ?? '')
  const save = useMutation({
    mutationFn: (mediaId: string) =>
      call(
        v1.PATCH('/v1/newsletters/{id}', {
          params: { path: { id } },
          body: { header_media: mediaId ? { media_id: mediaId } : null },
        }),
      ),
    onSuccess: (data) => queryClient.setQueryData(newsletterQuery(id).queryKey, data),
  })
  const list = (images.data?.media ?? []) as Array<{ id: string; filename: string | null; url: string }>
  return (
    <section>
      <h2>{w.headerImage}</h2>
      <p>{w.headerImageIntro}</p>
      {current && <img className="thumb" src={current.url} alt={w.headerImage} width={160} />}
      <form className="inline" onSubmit={handleSubmit(() => save.mutate(chosen))}>
        <fieldset disabled={!editable}>
          <Field label={w.headerImagePick}>
            <select value={chosen} onChange={(e) => setChosen(e.target.value)}>
              <option value="">{w.headerImageNone}</option>
              {list.map((m) => (
                <option key={m.id} value={m.id}>
                  {m.filename ?? m.id}
                </option>
              ))}
            </select>
          </Field>
          <button type="submit" disabled={save.isPending}>
            {w.headerImageSave}
          </button>
        </fieldset>
      </form>
      {images.isSuccess && list.length === 0 && <p className="note">{w.headerImageNoMedia}</p>}
      <ErrorText error={save.error ?? images.error} />
    </section>
  )
}

function Schedule({ id, timeZone, status }: { id: string; timeZone: string; status: string }) {
  const w = useWords(words)
  const queryClient = useQueryClient()
  const [date, setDate] = useState(dateInZone(timeZone, 1))
  const [time, setTime] = useState('09:00')
  const refresh = (data: NewsletterData) => {
    queryClient.setQueryData(newsletterQuery(id).queryKey, data)
    void queryClient.invalidateQueries({ queryKey: newsletterStatusQuery(id).queryKey })
  }
  const schedule = useMutation({
    mutationFn: () => {
      const at = zonedToIso(date, time, timeZone)
      return call(
        v1.POST('/v1/newsletters/{id}/schedule', {
          params: { path: { id } },
          body: { scheduled_at: at ?? `${date}T${time}` },
        }),
      )
    },
    onSuccess: refresh,
  })
  const cancel = useMutation({
    mutationFn: () => call(v1.POST('/v1/newsletters/{id}/cancel', { params: { path: { id } } })),
    onSuccess: refresh,
  })
  return (
    <section>
      <h2>{w.schedule}</h2>
      <p>{fill(w.scheduleIntro, { zone: timeZone })}</p>
      <form className="inline" onSubmit={handleSubmit(() => schedule.mutate())}>
        <TextField
          label={w.date}
          type="date"
          value={date}
          min={dateInZone(timeZone)}
          max={dateInZone(timeZone, 365)}
          required
          onChange={setDate}
        />
        <TextField label={w.time} type="time" value={time} required onChange={setTime} />
        <button type="submit" disabled={schedule.isPending}>
          {w.scheduleButton}
        </button>
      </form>
      <ErrorText error={schedule.error} />
      {status === 'scheduled' && (
        <button type="button" onClick={() => cancel.mutate()} disabled={cancel.isPending}>
          {w.cancel}
        </button>
      )}
      <ErrorText error={cancel.error} />
    </section>
  )
}

function SendStatus({ id, timeZone, current }: { id: string; timeZone: string; current: string }) {
  const w = useWords(words)
  const say = useEnum()
  const { language } = useI18n()
  const queryClient = useQueryClient()
  const live = current !== 'sent'
  const status = useQuery({
    ...newsletterStatusQuery(id),
    // counts move while it sends: look again every two seconds until it is done; after that delivery and read
    // receipts and clicks still come in, so every ten seconds while the page is open
    refetchInterval: (query) => (live || (query.state.data && query.state.data.phase !== 'done') ? 2000 : 10_000),
    placeholderData: keepPreviousData,
  })
  const s = status.data
  // the status moved on (sending, sent): the newsletter itself is read again, so its controls follow
  const moved = s !== undefined && s.status !== current
  useEffect(() => {
    if (moved) void queryClient.invalidateQueries({ queryKey: newsletterQuery(id).queryKey })
  }, [moved, queryClient, id])
  if (!s) return <ErrorText error={status.error} />
  const keys = ['queued', 'sent', 'delivered', 'read', 'failed', 'skipped'] as const
  const bars = keys.map((key) => ({ key, label: say('sendStatus', key), value: s.counts[key] }))
  return (
    <section aria-live="polite">
      <h2>{w.sending}</h2>
      <dl className="details">
        <dt>{w.status}</dt>
        <dd data-testid="newsletter-status">{statusWord(w, s.status)}</dd>
        <dt>{w.phase}</dt>
        <dd data-testid="newsletter-phase">{say('newsletterPhase', s.phase)}</dd>
        <dt>{w.recipients}</dt>
        <dd>{s.recipients}</dd>
        <dt>{w.dailyLimit}</dt>
        <dd>{s.daily_limit ?? w.unlimited}</dd>
        <dt>{w.resumesAt}</dt>
        <dd>{formatInZone(s.resumes_at, language, timeZone)}</dd>
        <dt>{w.stopReason}</dt>
        <dd>{s.stop_reason ?? '–'}</dd>
        <dt>{w.ctaClicks}</dt>
        <dd data-testid="cta-clicks">{s.cta_clicks}</dd>
        <dt>{w.ctaClickedContacts}</dt>
        <dd>{s.cta_clicked_contacts}</dd>
      </dl>
      <ProgressBar bars={bars} total={s.recipients} label={w.progress} />
      <BarChart bars={bars} label={w.chart} />
      <h3>{w.skipReasons}</h3>
      {Object.keys(s.skip_reasons).length === 0 ? (
        <p>{w.noSkips}</p>
      ) : (
        <ul>
          {Object.entries(s.skip_reasons).map(([reason, n]) => (
            <li key={reason}>
              {reason}: {n}
            </li>
          ))}
        </ul>
      )}
      <ErrorText error={status.error} />
      {s.recipients > 0 && <Recipients id={id} total={s.recipients} live={live || s.phase !== 'done'} />}
    </section>
  )
}

/** Who the newsletter went to, each contact by name (else number, else e-mail) with the send's status. */
function Recipients({ id, total, live }: { id: string; total: number; live: boolean }) {
  const w = useWords(words)
  const recipients = useQuery({ ...newsletterRecipientsQuery(id), refetchInterval: live ? 3000 : 10_000 })
  const rows = recipients.data?.recipients ?? []
  const contacts = useContactLabels(rows.map((r) => r.contact_id))
  const statusWords = w as unknown as Record<string, string | undefined>
  return (
    <>
      <h3>{w.recipientList}</h3>
      <ErrorText error={recipients.error} />
      {recipients.data?.has_more && <p>{fill(w.firstRecipients, { n: String(rows.length), total: String(total) })}</p>}
      <Table
        caption={w.recipientList}
        rows={rows}
        rowKey={(r) => r.send_id}
        columns={[
          [w.recipientContact, (r) => <ContactLink contact={contacts.get(r.contact_id)} unknown={w.deletedContact} />],
          [w.status, (r) => statusWords[r.status] ?? r.status],
          [w.recipientReason, (r) => r.reason ?? '–'],
        ]}
      />
    </>
  )
}

export function NewsletterPage({ id, session }: { id: string; session: SessionShape }) {
  const w = useWords(words)
  const { language } = useI18n()
  const navigate = useNavigate()
  const timeZone = session.account.timezone || 'UTC'
  const newsletter = useQuery({
    ...newsletterQuery(id),
    // the estimate follows the contacts; the status moves by itself while it is scheduled or sending
    refetchInterval: (query) => {
      const status = query.state.data?.newsletter.status
      return status === 'scheduled' || status === 'sending' ? 3000 : false
    },
  })
  const remove = useMutation({
    mutationFn: () => call(v1.DELETE('/v1/newsletters/{id}', { params: { path: { id } } })),
    onSuccess: () => void navigate({ to: '/newsletters' }),
  })
  const n = newsletter.data?.newsletter
  const editable = n?.status === 'draft' || n?.status === 'scheduled'
  return (
    <main>
      <BackLink to="/newsletters" label={w.back} />
      <ErrorText error={newsletter.error} />
      {n && (
        <>
          <h1>{n.name || n.subject}</h1>
          <dl className="details">
            <dt>{w.status}</dt>
            <dd>{statusWord(w, n.status)}</dd>
            <dt>{w.scheduledAt}</dt>
            <dd data-testid="scheduled-at">{formatInZone(n.scheduled_at, language, timeZone)}</dd>
            <dt>{w.subject}</dt>
            <dd>{n.subject}</dd>
          </dl>
          <p className="estimate" data-testid="estimate">
            {fill(w.estimate, { n: String(n.recipients_estimate) })}
          </p>
          <Preview subject={n.subject} content={n.content} />
          <HeaderImage id={id} current={n.header_media} editable={editable} />
          <SegmentBuilder id={id} segment={n.segment} editable={editable} />
          <CtaEditor id={id} cta={n.cta} editable={editable} tracking={n.cta_tracking} />
          {editable && <Schedule id={id} timeZone={timeZone} status={n.status} />}
          {n.status !== 'draft' && <SendStatus id={id} timeZone={timeZone} current={n.status} />}
          {editable && (
            <p>
              <button
                type="button"
                className="danger"
                onClick={() => {
                  if (window.confirm(w.confirmDelete)) remove.mutate()
                }}
              >
                {w.remove}
              </button>
            </p>
          )}
          <ErrorText error={remove.error} />
        </>
      )}
    </main>
  )
}
