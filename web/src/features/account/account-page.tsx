import { useMutation } from '@tanstack/react-query'
import { useState } from 'react'
import { app, call } from '../../api/client.ts'
import { ErrorText, Field } from '../../ui/components.tsx'
import { type Language, useI18n } from '../../ui/i18n.tsx'
import { type SessionShape, useSetSession } from '../../ui/session.ts'

export function AccountPage({ session }: { session: SessionShape }) {
  const { t, setLanguage } = useI18n()
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
      <h1>{t('account')}</h1>
      <p>
        {session.user.name} ({session.user.email}) · {session.account.name} · {t(session.role)}
      </p>
      <section aria-labelledby="language">
        <h2 id="language">{t('language')}</h2>
        <Field label={t('language')}>
          <select value={session.user.language} onChange={(e) => language.mutate(e.target.value as Language)}>
            <option value="de">Deutsch</option>
            <option value="en">English</option>
          </select>
        </Field>
        <ErrorText error={language.error} />
      </section>
      <section aria-labelledby="password">
        <h2 id="password">{t('changePassword')}</h2>
        <form
          onSubmit={(event) => {
            event.preventDefault()
            password.mutate()
          }}
        >
          <Field label={t('currentPassword')}>
            <input
              type="password"
              autoComplete="current-password"
              required
              value={current}
              onChange={(e) => setCurrent(e.target.value)}
            />
          </Field>
          <Field label={t('newPassword')}>
            <input
              type="password"
              autoComplete="new-password"
              minLength={10}
              required
              value={next}
              onChange={(e) => setNext(e.target.value)}
            />
          </Field>
          <ErrorText error={password.error} />
          {password.isSuccess && <p role="status">{t('passwordChanged')}</p>}
          <button type="submit" disabled={password.isPending}>
            {t('save')}
          </button>
        </form>
      </section>
    </main>
  )
}
