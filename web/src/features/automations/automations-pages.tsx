import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { Link, useNavigate } from '@tanstack/react-router'
import { useState } from 'react'
import { call, v1 } from '../../api/client.ts'
import { BackLink, CopyButton, EnumOptions, ErrorText, Field, handleSubmit, TextField } from '../../ui/components.tsx'
import { useEnum, useWords } from '../../ui/i18n.tsx'
import { Table } from '../../ui/table.tsx'
import { Runs, Sources, TriggerForContact } from './activity.tsx'
import { type Automation, type CreatedAutomation, defaultStep, INTENTS, type Intent, pick } from './automation-model.ts'
import { Builder, useDefinition } from './builder.tsx'
import { automationQuery, automationSourcesQuery, automationsQuery } from './queries.ts'
import { useFieldLabel } from './safety-check.tsx'
import { words } from './words.ts'

export function AutomationsPage() {
  const w = useWords(words)
  const say = useEnum()
  const navigate = useNavigate()
  const queryClient = useQueryClient()
  const automations = useQuery(automationsQuery)
  const [name, setName] = useState('')
  const [intent, setIntent] = useState<Intent>('transactional')
  const definition = useDefinition({ type: 'webhook' }, [defaultStep('add_tag')])
  const { trigger, steps } = definition.builder
  const fieldLabel = useFieldLabel()
  const create = useMutation({
    mutationFn: async () => call(v1.POST('/v1/automations', { body: { name, intent, trigger, steps } })),
    onSuccess: (created) => {
      // the signing secret is shown once: the detail page takes it from here
      queryClient.setQueryData(['automation-created', created.id], created)
      void navigate({ to: '/automations/$id', params: { id: created.id } })
    },
  })
  const items = automations.data?.automations
  return (
    <main>
      <h1>{w.title}</h1>
      <ErrorText error={automations.error} />
      {items && items.length === 0 && <p className="empty">{w.none}</p>}
      {items && items.length > 0 && (
        <Table
          rows={items}
          rowKey={(a) => a.id}
          columns={[
            [
              w.name,
              (a) => (
                <Link to="/automations/$id" params={{ id: a.id }}>
                  {a.name}
                </Link>
              ),
            ],
            [w.status, (a) => say('automationStatus', a.status)],
            [w.trigger, (a) => say('triggerType', a.trigger.type)],
          ]}
        />
      )}
      <h2>{w.create}</h2>
      <form onSubmit={handleSubmit(() => create.mutate())}>
        <TextField label={w.name} value={name} maxLength={200} required onChange={setName} />
        <Field label={w.intent}>
          <select
            value={intent}
            onChange={(e) => {
              definition.setTouched(true)
              setIntent(pick(INTENTS, e.target.value) ?? intent)
            }}
          >
            <EnumOptions kind="intent" values={INTENTS} />
          </select>
        </Field>
        <Builder intent={intent} {...definition.builder} />
        <ErrorText error={create.error} fieldLabel={fieldLabel} />
        <p>
          <button type="submit" disabled={create.isPending}>
            {w.save}
          </button>
        </p>
      </form>
    </main>
  )
}

function Editor({ automation }: { automation: Automation }) {
  const w = useWords(words)
  const queryClient = useQueryClient()
  const [name, setName] = useState(automation.name)
  const { builder, setTrigger, setSteps } = useDefinition(automation.trigger, automation.steps)
  const { trigger, steps } = builder
  const fieldLabel = useFieldLabel()
  const save = useMutation({
    mutationFn: async () =>
      call(
        v1.PATCH('/v1/automations/{id}', {
          params: { path: { id: automation.id } },
          body: { name, trigger, steps },
        }),
      ),
    onSuccess: (data) => {
      queryClient.setQueryData(['automation', automation.id], data)
      setSteps(data.steps)
      setTrigger(data.trigger)
    },
  })
  return (
    <form onSubmit={handleSubmit(() => save.mutate())}>
      <TextField label={w.name} value={name} maxLength={200} required onChange={setName} />
      <Builder intent={pick(INTENTS, automation.intent)} {...builder} />
      <ErrorText error={save.error} fieldLabel={fieldLabel} />
      <p>
        <button type="submit" disabled={save.isPending}>
          {w.update}
        </button>
      </p>
    </form>
  )
}

export function AutomationPage({ id }: { id: string }) {
  const w = useWords(words)
  const say = useEnum()
  const queryClient = useQueryClient()
  const created = queryClient.getQueryData<CreatedAutomation>(['automation-created', id])
  const automation = useQuery(automationQuery(id))
  const setStatus = useMutation({
    mutationFn: async (to: 'activate' | 'pause') =>
      call(
        to === 'activate'
          ? v1.POST('/v1/automations/{id}/activate', { params: { path: { id } } })
          : v1.POST('/v1/automations/{id}/pause', { params: { path: { id } } }),
      ),
    onSuccess: (data) => {
      queryClient.setQueryData(['automation', id], data)
      void queryClient.invalidateQueries({ queryKey: automationSourcesQuery.queryKey })
    },
  })
  const a = automation.data
  return (
    <main>
      <BackLink to="/automations" label={w.back} />
      <ErrorText error={automation.error} />
      {a && (
        <>
          <h1>{a.name}</h1>
          <dl className="details">
            <dt>{w.status}</dt>
            <dd data-testid="automation-status">{say('automationStatus', a.status)}</dd>
            <dt>{w.intent}</dt>
            <dd>{say('intent', a.intent)}</dd>
          </dl>
          {a.notice && (
            <div className="notice" role="status">
              <strong>{w.notice}</strong> {a.notice}
            </div>
          )}
          {created?.signing_secret && (
            <p>
              {w.secret}: <code>{created.signing_secret}</code>{' '}
              <CopyButton text={created.signing_secret} label={w.secret} />
            </p>
          )}
          {a.status === 'active' ? (
            <button type="button" onClick={() => setStatus.mutate('pause')} disabled={setStatus.isPending}>
              {w.pause}
            </button>
          ) : (
            <button type="button" onClick={() => setStatus.mutate('activate')} disabled={setStatus.isPending}>
              {w.activate}
            </button>
          )}
          <ErrorText error={setStatus.error} />
          <Sources id={id} />
          {a.status === 'active' && <TriggerForContact id={id} />}
          <Runs id={id} />
          <h2>{w.update}</h2>
          <Editor key={a.id} automation={a} />
        </>
      )}
    </main>
  )
}
