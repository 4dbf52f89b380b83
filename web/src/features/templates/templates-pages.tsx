import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { Link, useNavigate } from '@tanstack/react-router'
import { useState } from 'react'
import { app, call, v1 } from '../../api/client.ts'
import { BackLink, Field, formatTime, handleSubmit } from '../../ui/components.tsx'
import { useDebounced } from '../../ui/hooks.ts'
import { fill, useI18n, useWords } from '../../ui/i18n.tsx'
import { PageError } from '../../ui/page-error.tsx'
import type { SessionShape } from '../../ui/session.ts'
import { Table } from '../../ui/table.tsx'
import { templateQuery, templatesKey, templatesQuery } from './queries.ts'
import { errors, issueWords, words } from './words.ts'

// Templates: the list with provider status, and an editor that runs the deterministic check (POST
// /app/templates/check) while typing, saves (PATCH) and submits to the provider.

type Channel = 'chat' | 'email'
type Purpose = 'marketing' | 'utility' | 'optin_confirm'

interface Draft {
  name: string
  channel: Channel
  purpose: Purpose
  language: string
  subject: string
  content: string
}

export function TemplatesPage({ session }: { session: SessionShape }) {
  const w = useWords(words)
  const { language } = useI18n()
  const [creating, setCreating] = useState(false)
  const templates = useQuery(templatesQuery)
  const canWrite = session.scopes.includes('templates:write')
  return (
    <main>
      <h1>{w.title}</h1>
      {!canWrite && <p>{w.readOnly}</p>}
      {canWrite && !creating && (
        <button type="button" onClick={() => setCreating(true)}>
          {w.newTemplate}
        </button>
      )}
      {creating && <TemplateEditor session={session} />}
      <PageError error={templates.error} words={{}} />
      <Table
        rows={templates.data?.templates}
        rowKey={(t) => t.id}
        columns={[
          [
            w.name,
            (t) => (
              <Link to="/templates/$id" params={{ id: t.id }}>
                {t.name}
              </Link>
            ),
          ],
          [w.channel, (t) => w[t.channel]],
          [w.purpose, (t) => w[t.purpose]],
          [w.languageColumn, (t) => t.language],
          [w.state, (t) => w[`state_${t.state}`]],
          [w.providerStatus, (t) => t.provider_status ?? '–'],
          [w.created, (t) => formatTime(t.created_at, language, '')],
        ]}
      />
      {templates.data && templates.data.templates.length === 0 && <p className="empty">{w.none}</p>}
    </main>
  )
}

export function TemplatePage({ id, session }: { id: string; session: SessionShape }) {
  const w = useWords(words)
  const template = useQuery(templateQuery(id))
  return (
    <main>
      <BackLink to="/templates" label={w.back} />
      <PageError error={template.error} words={{}} />
      {template.data && <TemplateEditor key={template.data.template.updated_at} session={session} id={id} />}
    </main>
  )
}

function TemplateEditor({ id, session }: { id?: string; session: SessionShape }) {
  const w = useWords(words)
  const issueText = useWords(issueWords)
  const e = useWords(errors)
  const { language } = useI18n()
  const queryClient = useQueryClient()
  const navigate = useNavigate()
  const stored = useQuery({
    ...templateQuery(id ?? ''),
    enabled: id !== undefined,
  })
  const t = stored.data?.template
  const [draft, setDraft] = useState<Draft>(() => ({
    name: t?.name ?? '',
    channel: (t?.channel ?? 'chat') as Channel,
    purpose: (t?.purpose ?? 'marketing') as Purpose,
    language: t?.language ?? session.account.language,
    subject: t?.subject ?? '',
    content: t?.content ?? '',
  }))
  const set = (patch: Partial<Draft>) => setDraft((d) => ({ ...d, ...patch }))
  const checked = useDebounced(draft, 250)
  const check = useQuery({
    queryKey: ['template-check', id, checked],
    queryFn: () =>
      call(
        app.POST('/app/templates/check', {
          body: {
            ...(id ? { id } : {}),
            name: checked.name,
            content: checked.content,
            channel: checked.channel,
            purpose: checked.purpose,
            language: checked.language,
            subject: checked.channel === 'email' ? checked.subject || null : null,
            buttons: (t?.buttons ?? []).map((b) => ({ type: b.type, text: b.text, url: b.url ?? null })),
            header_media: t?.header_media ?? null,
          },
        }),
      ),
    placeholderData: (previous) => previous,
  })
  const canWrite = session.scopes.includes('templates:write')
  const canSubmit = session.scopes.includes('templates:submit')
  const changed =
    !t ||
    t.name !== draft.name ||
    t.content !== draft.content ||
    t.language !== draft.language ||
    t.purpose !== draft.purpose ||
    (t.subject ?? '') !== draft.subject

  const save = useMutation({
    mutationFn: async () => {
      const subject = draft.channel === 'email' ? draft.subject : undefined
      if (!id) {
        return call(
          v1.POST('/v1/templates', {
            body: {
              name: draft.name,
              content: draft.content,
              channel: draft.channel,
              purpose: draft.purpose,
              language: draft.language,
              ...(subject ? { subject } : {}),
            },
          }),
        )
      }
      return call(
        v1.PATCH('/v1/templates/{id}', {
          params: { path: { id } },
          body: {
            name: draft.name,
            content: draft.content,
            purpose: draft.purpose,
            language: draft.language,
            ...(subject ? { subject } : {}),
          },
        }),
      )
    },
    onSuccess: (result) => {
      void queryClient.invalidateQueries({ queryKey: templatesKey })
      if (!id) void navigate({ to: '/templates/$id', params: { id: result.template.id } })
      else queryClient.setQueryData(templateQuery(id).queryKey, { template: result.template })
    },
  })
  const submit = useMutation({
    mutationFn: async () => {
      if (changed) await save.mutateAsync()
      return call(v1.POST('/v1/templates/{id}/submit', { params: { path: { id: id as string } } }))
    },
    onSuccess: (result) => {
      queryClient.setQueryData(templateQuery(id as string).queryKey, { template: result.template })
      void queryClient.invalidateQueries({ queryKey: templatesKey })
    },
  })
  const issues = check.data?.issues ?? []
  const bodyLimit =
    draft.channel === 'chat' ? (check.data?.limits.chat_body ?? 1024) : (check.data?.limits.content ?? 20000)
  const fieldName = (field: string) => w[`field_${field.split('/')[0]}` as keyof typeof w] ?? field
  return (
    <section aria-labelledby="editor-title">
      <h2 id="editor-title">{t ? t.name : w.newTemplate}</h2>
      {t && (
        <dl className="details">
          <dt>{w.state}</dt>
          <dd data-testid="template-state">{w[`state_${t.state}`]}</dd>
          <dt>{w.providerStatus}</dt>
          <dd data-testid="provider-status">{t.provider_status ?? '–'}</dd>
          {t.rejection_reason_text && (
            <>
              <dt>{w.rejection}</dt>
              <dd>{t.rejection_reason_text}</dd>
            </>
          )}
          {t.submitted_at && (
            <>
              <dt>{w.submit}</dt>
              <dd>{formatTime(t.submitted_at, language, '')}</dd>
            </>
          )}
        </dl>
      )}
      <form onSubmit={handleSubmit(() => save.mutate())}>
        <Field label={w.name}>
          <input
            required
            maxLength={120}
            value={draft.name}
            onChange={(ev) => set({ name: ev.target.value })}
            readOnly={!canWrite}
          />
        </Field>
        {!id && (
          <Field label={w.channel}>
            <select value={draft.channel} onChange={(ev) => set({ channel: ev.target.value as Channel })}>
              <option value="chat">{w.chat}</option>
              <option value="email">{w.email}</option>
            </select>
          </Field>
        )}
        <Field label={w.purpose}>
          <select
            value={draft.purpose}
            onChange={(ev) => set({ purpose: ev.target.value as Purpose })}
            disabled={!canWrite}
          >
            <option value="marketing">{w.marketing}</option>
            <option value="utility">{w.utility}</option>
            <option value="optin_confirm">{w.optin_confirm}</option>
          </select>
        </Field>
        <Field label={w.language}>
          <input
            required
            maxLength={10}
            value={draft.language}
            onChange={(ev) => set({ language: ev.target.value })}
            readOnly={!canWrite}
          />
        </Field>
        {draft.channel === 'email' && (
          <Field label={w.subject}>
            <input
              maxLength={200}
              value={draft.subject}
              onChange={(ev) => set({ subject: ev.target.value })}
              readOnly={!canWrite}
            />
          </Field>
        )}
        <Field label={w.content}>
          <textarea
            required
            rows={6}
            value={draft.content}
            onChange={(ev) => set({ content: ev.target.value })}
            readOnly={!canWrite}
            aria-describedby="content-help"
          />
        </Field>
        <p id="content-help" className="muted">
          {w.contentHelp} {fill(w.characters, { count: String([...draft.content].length), max: String(bodyLimit) })}
        </p>
        <div aria-live="polite" className="check-result">
          <h3>{w.checkTitle}</h3>
          <PageError error={check.error} words={e} />
          {check.data && issues.length === 0 && <p className="ok">{w.checkPasses}</p>}
          {issues.length > 0 && (
            <>
              <p>{fill(w.checkIssues, { count: String(issues.length) })}</p>
              <ul className="issues">
                {issues.map((issue) => (
                  <li key={`${issue.code}-${issue.field}`}>
                    {fieldName(issue.field)}: {issueText[issue.code] ?? issue.message}
                  </li>
                ))}
              </ul>
            </>
          )}
          {check.data && (
            <p className="muted">
              {w.providerName}: <code>{check.data.provider_name || '–'}</code>
              {check.data.variables.length > 0 && ` · ${w.variables}: ${check.data.variables.join(', ')}`}
            </p>
          )}
        </div>
        <PageError error={save.error} words={e} />
        <PageError error={submit.error} words={e} />
        {save.isSuccess && !changed && <p role="status">{w.saved}</p>}
        {submit.isSuccess && (
          <p role="status">{fill(w.submitted, { status: submit.data.template.provider_status ?? '–' })}</p>
        )}
        {id && changed && <p>{w.unsaved}</p>}
        {canWrite && (
          <div className="inline">
            <button type="submit" disabled={save.isPending || (!!id && !changed)}>
              {id ? w.save : w.create}
            </button>
            {id && t?.channel === 'chat' && canSubmit && (
              <button
                type="button"
                className="secondary"
                disabled={submit.isPending || issues.length > 0}
                onClick={() => submit.mutate()}
              >
                {w.submit}
              </button>
            )}
          </div>
        )}
      </form>
    </section>
  )
}
