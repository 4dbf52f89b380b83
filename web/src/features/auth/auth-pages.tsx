import { useMutation, useQuery } from '@tanstack/react-query'
import { Link, useNavigate } from '@tanstack/react-router'
import { useState } from 'react'
import { app, call } from '../../api/client.ts'
import { Card, ErrorText, handleSubmit, PasswordField, TextField } from '../../ui/components.tsx'
import { fill, useEnum, useWords } from '../../ui/i18n.tsx'
import { useSetSession } from '../../ui/session.ts'
import { invitationQuery, setupLinkQuery } from './queries.ts'
import { SignInForm } from './sign-in-form.tsx'
import { authWords } from './words.ts'

function useAfterSignIn() {
  const setSession = useSetSession()
  const navigate = useNavigate()
  return (session: unknown) => {
    setSession(session)
    void navigate({ to: '/' })
  }
}

export function SignInPage() {
  const w = useWords(authWords)
  const done = useAfterSignIn()
  return (
    <Card title={w.signIn}>
      <SignInForm onSignedIn={done} />
      <p>
        <Link to="/reset">{w.forgotPassword}</Link>
      </p>
    </Card>
  )
}

export function SetupPage({ token }: { token: string }) {
  const w = useWords(authWords)
  const done = useAfterSignIn()
  const [name, setName] = useState('')
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const link = useQuery({
    ...setupLinkQuery(token),
    retry: false,
  })
  const setup = useMutation({
    mutationFn: () => call(app.POST('/app/setup', { body: { token, name, email, password } })),
    onSuccess: done,
  })
  if (link.isPending) return <Card title={w.setupTitle}>{w.loading}</Card>
  if (link.error)
    return (
      <Card title={w.setupTitle}>
        <ErrorText error={link.error} />
      </Card>
    )
  return (
    <Card title={w.setupTitle}>
      <p>{fill(w.setupIntro, { account: link.data.account.name })}</p>
      <form onSubmit={handleSubmit(() => setup.mutate())}>
        <TextField label={w.name} autoComplete="name" required value={name} onChange={setName} />
        <TextField label={w.email} type="email" autoComplete="username" required value={email} onChange={setEmail} />
        <PasswordField label={w.newPassword} value={password} onChange={setPassword} isNew />
        <ErrorText error={setup.error} />
        <button type="submit" disabled={setup.isPending}>
          {w.setupDone}
        </button>
      </form>
    </Card>
  )
}

export function InvitationPage({ token }: { token: string }) {
  const w = useWords(authWords)
  const say = useEnum()
  const done = useAfterSignIn()
  const [name, setName] = useState('')
  const [password, setPassword] = useState('')
  const info = useQuery({
    ...invitationQuery(token),
    retry: false,
  })
  const accept = useMutation({
    mutationFn: () =>
      call(
        app.POST('/app/invitations/accept', {
          body: { token, password, name },
        }),
      ),
    onSuccess: done,
  })
  if (info.isPending) return <Card title={w.accept}>{w.loading}</Card>
  if (info.error)
    return (
      <Card title={w.accept}>
        <ErrorText error={info.error} />
      </Card>
    )
  const invitation = info.data
  return (
    <Card title={fill(w.invitationTitle, { account: invitation.account_name })}>
      <p>{fill(w.invitationIntro, { role: say('role', invitation.role), email: invitation.email })}</p>
      {/* the same form for everyone: the page does not know whether the address has a sign-in already */}
      <p>{w.invitationExisting}</p>
      <form onSubmit={handleSubmit(() => accept.mutate())}>
        <TextField label={w.name} autoComplete="name" required value={name} onChange={setName} />
        <PasswordField label={w.newPassword} value={password} onChange={setPassword} isNew />
        <ErrorText error={accept.error} />
        <button type="submit" disabled={accept.isPending}>
          {w.accept}
        </button>
      </form>
    </Card>
  )
}

export function ResetRequestPage() {
  const w = useWords(authWords)
  const [email, setEmail] = useState('')
  const request = useMutation({ mutationFn: () => call(app.POST('/app/password-reset', { body: { email } })) })
  return (
    <Card title={w.resetTitle}>
      <p>{w.resetIntro}</p>
      {request.isSuccess ? (
        <p role="status">{w.resetSent}</p>
      ) : (
        <form onSubmit={handleSubmit(() => request.mutate())}>
          <TextField label={w.email} type="email" autoComplete="username" required value={email} onChange={setEmail} />
          <ErrorText error={request.error} />
          <button type="submit" disabled={request.isPending}>
            {w.resetSend}
          </button>
        </form>
      )}
    </Card>
  )
}

export function ResetCompletePage({ token }: { token: string }) {
  const w = useWords(authWords)
  const [password, setPassword] = useState('')
  const complete = useMutation({
    mutationFn: () => call(app.POST('/app/password-reset/complete', { body: { token, password } })),
  })
  return (
    <Card title={w.resetTitle}>
      {complete.isSuccess ? (
        <p role="status">
          {w.resetDone} <Link to="/sign-in">{w.signIn}</Link>
        </p>
      ) : (
        <form onSubmit={handleSubmit(() => complete.mutate())}>
          <PasswordField label={w.newPassword} value={password} onChange={setPassword} isNew />
          <ErrorText error={complete.error} />
          <button type="submit" disabled={complete.isPending}>
            {w.resetSave}
          </button>
        </form>
      )}
    </Card>
  )
}
