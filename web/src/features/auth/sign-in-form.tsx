import { useMutation } from '@tanstack/react-query'
import { type FormEvent, useState } from 'react'
import { app, call } from '../../api/client.ts'
import { ErrorText, PasswordField, TextField } from '../../ui/components.tsx'
import { useWords } from '../../ui/i18n.tsx'
import { authWords } from './words.ts'

/**
 * E-mail and password, `POST /app/sign-in`, the refusal in words. The sign-in page and the OAuth consent step use it;
 * `onSignedIn` gets the new session (what happens next is theirs).
 */
export function SignInForm({ onSignedIn }: { onSignedIn: (session: unknown) => void }) {
  const w = useWords(authWords)
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const signIn = useMutation({
    mutationFn: () => call(app.POST('/app/sign-in', { body: { email, password } })),
    onSuccess: onSignedIn,
  })
  const submit = (event: FormEvent) => {
    event.preventDefault()
    signIn.mutate()
  }
  return (
    <form onSubmit={submit}>
      <TextField label={w.email} type="email" autoComplete="username" required value={email} onChange={setEmail} />
      <PasswordField label={w.password} value={password} onChange={setPassword} />
      <ErrorText error={signIn.error} />
      <button type="submit" disabled={signIn.isPending}>
        {w.signIn}
      </button>
    </form>
  )
}
