import { useMutation, useQuery } from '@tanstack/react-query'
import { useId, useState } from 'react'
import { ApiError } from '../../api/client.ts'
import { Card, ErrorText } from '../../ui/components.tsx'
import { fill, useWords } from '../../ui/i18n.tsx'
import { type SessionShape, useSession, useSetSession } from '../../ui/session.ts'
import { SignInForm } from '../auth/sign-in-form.tsx'
import { WORDS } from './words.ts'

// The consent step of OAuth for assistants (docs/tool-server.md): /oauth/authorize sends the browser here with the
// request; a member signs in if needed, chooses the account, sees the client and the scopes, and approves or denies.
// The server checks the request again on every call (src/mcp/consent.ts); the answer is where the browser goes next.

interface ConsentView {
  client: { client_id: string; client_name: string; redirect_uri: string }
  requested_scopes: string[]
  resource: string
  user: { name: string; email: string }
  accounts: Array<{ id: string; name: string; role: string; scopes: string[]; current: boolean }>
}

const FIELDS = [
  'client_id',
  'redirect_uri',
  'response_type',
  'code_challenge',
  'code_challenge_method',
  'scope',
  'state',
  'resource',
] as const

function requestOfPage(): Record<string, string> {
  const search = new URLSearchParams(window.location.search)
  const request: Record<string, string> = {}
  for (const name of FIELDS) {
    const value = search.get(name)
    if (value !== null) request[name] = value
  }
  return request
}

async function send<T>(method: 'GET' | 'POST', url: string, csrf: string, body?: unknown): Promise<T> {
  let response: Response
  try {
    response = await fetch(url, {
      method,
      credentials: 'same-origin',
      headers: body === undefined ? {} : { 'content-type': 'application/json', 'x-csrf-token': csrf },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  } catch {
    throw new ApiError(0, 'network', '')
  }
  const data = (await response.json().catch(() => ({}))) as { error?: { code?: string; message?: string } }
  if (!response.ok) throw new ApiError(response.status, data.error?.code ?? 'unknown', data.error?.message ?? '')
  return data as T
}

export function ConsentPage() {
  const w = useWords(WORDS)
  const session = useSession()
  if (session.isPending) return <Card title={w.title}>{w.loading}</Card>
  if (!session.data) return <ConsentSignIn />
  return <ConsentDecision session={session.data} />
}

function ConsentSignIn() {
  const w = useWords(WORDS)
  const setSession = useSetSession()
  return (
    <Card title={w.title}>
      <p>{w.signInFirst}</p>
      <SignInForm onSignedIn={setSession} />
    </Card>
  )
}

function ConsentDecision({ session }: { session: SessionShape }) {
  const w = useWords(WORDS)
  const [request] = useState(requestOfPage)
  const query = new URLSearchParams(request).toString()
  const view = useQuery({
    queryKey: ['consent', session.user.id, query],
    queryFn: () => send<ConsentView>('GET', `/app/oauth/authorization?${query}`, session.csrf_token),
    retry: false,
  })
  const [chosen, setChosen] = useState<string | null>(null)
  const decide = useMutation({
    mutationFn: (input: { decision: 'approve' | 'deny'; account_id: string }) =>
      send<{ redirect_to: string }>('POST', '/app/oauth/authorization', session.csrf_token, { ...request, ...input }),
    onSuccess: ({ redirect_to }) => window.location.assign(redirect_to),
  })
  const groupId = useId()
  if (view.isPending) return <Card title={w.title}>{w.loading}</Card>
  if (view.error || !view.data) {
    return (
      <Card title={w.title}>
        <p className="error" role="alert">
          {w.invalid}
        </p>
        <ErrorText error={view.error} />
      </Card>
    )
  }
  const data = view.data
  const accountId = chosen ?? (data.accounts.find((a) => a.current) ?? data.accounts[0])?.id ?? ''
  const account = data.accounts.find((a) => a.id === accountId)
  const withheld = data.requested_scopes.filter((scope) => !account?.scopes.includes(scope))
  return (
    <Card title={w.title}>
      <p>{fill(w.asks, { client: data.client.client_name })}</p>
      <p>{fill(w.signedInAs, { name: data.user.name, email: data.user.email })}</p>
      <fieldset>
        <legend id={groupId}>{w.account}</legend>
        {data.accounts.map((a) => (
          <div key={a.id}>
            <label>
              <input
                type="radio"
                name="account"
                value={a.id}
                checked={a.id === accountId}
                onChange={() => setChosen(a.id)}
              />{' '}
              {a.name} ({fill(w.role, { role: a.role })})
            </label>
          </div>
        ))}
      </fieldset>
      <h2>{w.scopes}</h2>
      {account && account.scopes.length > 0 ? (
        <ul aria-label={w.scopes}>
          {account.scopes.map((scope) => (
            <li key={scope}>
              <code>{scope}</code>
            </li>
          ))}
        </ul>
      ) : (
        <p role="alert">{w.notAllowed}</p>
      )}
      {withheld.length > 0 && account && account.scopes.length > 0 && (
        <p>{fill(w.withheld, { scopes: withheld.join(', ') })}</p>
      )}
      <p>{fill(w.returnsTo, { uri: new URL(data.client.redirect_uri).origin })}</p>
      <ErrorText error={decide.error} />
      {decide.isSuccess && <p role="status">{w.redirecting}</p>}
      <div className="actions">
        <button
          type="button"
          onClick={() => decide.mutate({ decision: 'approve', account_id: accountId })}
          disabled={decide.isPending || decide.isSuccess || !account || account.scopes.length === 0}
        >
          {w.approve}
        </button>{' '}
        <button
          type="button"
          onClick={() => decide.mutate({ decision: 'deny', account_id: accountId })}
          disabled={decide.isPending || decide.isSuccess}
        >
          {w.deny}
        </button>
      </div>
    </Card>
  )
}
