import { useMutation } from '@tanstack/react-query'
import { useState } from 'react'
import { app, call } from '../../api/client.ts'
import { ErrorText, Field, handleSubmit, PasswordField } from '../../ui/components.tsx'
import { type Language, useEnum, useI18n, useWords } from '../../ui/i18n.tsx'
import { type SessionShape, useSetSession } from '../../ui/session.ts'
import { accountWords } from './words.ts'

export function AccountPage({ session }: { session: SessionShape }) {
  const { setLanguage } = useI18n()
  const w = useWords(accountWords)
  const say = useEnum()
  const setSession = useSetSession()
  const [current, setCurrent] = useState('')
  const [next, setNext] = useState('')
  const language = useMutation({
    mutationFn: (value: Language) => call(app.PUT('/app/session/language', { body: { language: value } })),
    onSuccess: (result) => {
      setSession(result)
      setLanguage((result as SessionShape).user.language)
    },
  })
  const password = useMutation({
    mutationFn: () => call(app.POST('/app/password', { body: { current_password: current, new_password: next } })),
    onSuccess: (result) => {
      setSession(result)
      setCurrent('')
      setNext('')
    },
  })
  return (
    <main>
      <h1>{w.account}</h1>
      <p>
        {session.user.name} ({session.user.email}) · {session.account.name} · {say('role', session.role)}
      </p>
      <section aria-labelledby="language">
        <h2 id="language">{w.language}</h2>
        <Field label={w.language}>
          <select value={session.user.language} onChange={(e) => language.mutate(e.target.value as Language)}>
            <option value="de">Deutsch</option>
            <option value="en">English</option>
          </select>
        </Field>
        <ErrorText error={language.error} />
      </section>
      <section aria-labelledby="password">
        <h2 id="password">{w.changePassword}</h2>
        <form onSubmit={handleSubmit(() => password.mutate())}>
          <PasswordField label={w.currentPassword} value={current} onChange={setCurrent} />
          <PasswordField label={w.newPassword} value={next} onChange={setNext} isNew />
          <ErrorText error={password.error} />
          {password.isSuccess && <p role="status">{w.passwordChanged}</p>}
          <button type="submit" disabled={password.isPending}>
            {w.save}
          </button>
        </form>
      </section>
    </main>
  )
}
