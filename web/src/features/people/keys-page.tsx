import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useState } from 'react'
import { app, call } from '../../api/client.ts'
import { ErrorText, formatTime, handleSubmit, TextField } from '../../ui/components.tsx'
import { useI18n, useWords } from '../../ui/i18n.tsx'
import { Table } from '../../ui/table.tsx'
import { keysQuery } from './queries.ts'
import { peopleWords } from './words.ts'

// the scopes a key can carry (section 5 of the API); the server checks them again
const SCOPES = [
  'contacts:read',
  'contacts:write',
  'contacts:delete',
  'messages:write',
  'inbox:read',
  'templates:read',
  'templates:write',
  'templates:submit',
  'templates:delete',
  'webhooks:read',
  'webhooks:write',
  'automations:read',
  'automations:write',
  'automations:delete',
  'newsletters:read',
  'newsletters:write',
  'newsletters:schedule',
  'newsletters:delete',
  'followups:read',
  'followups:write',
  'settings:read',
  'settings:write',
  'team:read',
  'stats:read',
  'media:read',
  'media:write',
  'knowledge:write',
]

export function KeysPage() {
  const { language } = useI18n()
  const w = useWords(peopleWords)
  const queryClient = useQueryClient()
  const [name, setName] = useState('')
  const [scopes, setScopes] = useState<string[]>(['contacts:read'])
  const [secret, setSecret] = useState('')
  const [copied, setCopied] = useState(false)
  const keys = useQuery(keysQuery)
  const create = useMutation({
    mutationFn: () => call(app.POST('/app/keys', { body: { name, scopes } })),
    onSuccess: (result) => {
      setSecret(result.secret)
      setCopied(false)
      setName('')
      void queryClient.invalidateQueries({ queryKey: keysQuery.queryKey })
    },
  })
  const revoke = useMutation({
    mutationFn: (id: string) => call(app.DELETE('/app/keys/{id}', { params: { path: { id } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: keysQuery.queryKey }),
  })
  const toggle = (scope: string) =>
    setScopes((current) => (current.includes(scope) ? current.filter((s) => s !== scope) : [...current, scope]))

  return (
    <main>
      <h1>{w.keys}</h1>
      <ErrorText error={keys.error} />
      <section aria-labelledby="create-key">
        <h2 id="create-key">{w.createKey}</h2>
        <form onSubmit={handleSubmit(() => create.mutate())}>
          <TextField label={w.keyName} required maxLength={120} value={name} onChange={setName} />
          <fieldset className="scopes">
            <legend>{w.scopes}</legend>
            {SCOPES.map((scope) => (
              <label key={scope} className="check">
                <input type="checkbox" checked={scopes.includes(scope)} onChange={() => toggle(scope)} />
                <code>{scope}</code>
              </label>
            ))}
          </fieldset>
          <ErrorText error={create.error} />
          <button type="submit" disabled={create.isPending || scopes.length === 0}>
            {w.createKey}
          </button>
        </form>
        {secret && (
          <div className="secret" role="status">
            <p>{w.keyShownOnce}</p>
            <output data-testid="new-key">{secret}</output>{' '}
            <button
              type="button"
              onClick={() => {
                void navigator.clipboard?.writeText(secret).then(() => setCopied(true))
              }}
            >
              {copied ? w.copied : w.copy}
            </button>
          </div>
        )}
      </section>
      <ErrorText error={revoke.error} />
      <Table
        rows={keys.data?.keys}
        rowKey={(key) => key.id}
        columns={[
          [w.keyName, (key) => key.name],
          [w.prefix, (key) => <code>{key.prefix}…</code>],
          [w.scopes, (key) => key.scopes.join(', ')],
          [w.created, (key) => formatTime(key.created_at, language, '')],
          [
            w.status,
            (key) =>
              key.revoked_at ? (
                w.revoked
              ) : (
                <button type="button" onClick={() => revoke.mutate(key.id)} aria-label={`${w.revoke}: ${key.name}`}>
                  {w.revoke}
                </button>
              ),
          ],
        ]}
      />
    </main>
  )
}
