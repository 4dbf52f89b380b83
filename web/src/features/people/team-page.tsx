import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useState } from 'react'
import { app, call, v1 } from '../../api/client.ts'
import { ErrorText, Field, formatTime } from '../../ui/components.tsx'
import { useI18n } from '../../ui/i18n.tsx'
import type { SessionShape } from '../../ui/session.ts'

type Role = 'owner' | 'admin' | 'member' | 'viewer'
const ROLES: Role[] = ['owner', 'admin', 'member', 'viewer']

export function TeamPage({ session }: { session: SessionShape }) {
  const { t, language } = useI18n()
  const queryClient = useQueryClient()
  const manage = session.permissions.includes('team:manage')
  const [email, setEmail] = useState('')
  const [role, setRole] = useState<Role>('member')
  const [notice, setNotice] = useState<{ sent: boolean; url?: string } | null>(null)
  const team = useQuery({
    queryKey: ['team'],
    queryFn: () => call(v1.GET('/v1/team', { params: { query: { limit: 200, offset: 0 } } })),
  })
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['team'] })
  const invite = useMutation({
    mutationFn: () => call(app.POST('/app/team/invitations', { body: { email, role } })),
    onSuccess: (result) => {
      setNotice({ sent: result.email_sent, url: result.invite_url })
      setEmail('')
      void refresh()
    },
  })
  const change = useMutation({
    mutationFn: (input: { id: string; role: Role }) =>
      call(app.PATCH('/app/team/{id}', { params: { path: { id: input.id } }, body: { role: input.role } })),
    onSuccess: refresh,
  })
  const remove = useMutation({
    mutationFn: (id: string) => call(app.DELETE('/app/team/{id}', { params: { path: { id } } })),
    onSuccess: refresh,
  })
  return (
    <main>
      <h1>{t('team')}</h1>
      {manage ? (
        <section aria-labelledby="invite">
          <h2 id="invite">{t('invite')}</h2>
          <form
            className="inline"
            onSubmit={(event) => {
              event.preventDefault()
              invite.mutate()
            }}
          >
            <Field label={t('email')}>
              <input type="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
            </Field>
            <Field label={t('role')}>
              <select value={role} onChange={(e) => setRole(e.target.value as Role)}>
                {ROLES.map((r) => (
                  <option key={r} value={r}>
                    {t(r)}
                  </option>
                ))}
              </select>
            </Field>
            <button type="submit" disabled={invite.isPending}>
              {t('invite')}
            </button>
          </form>
          <ErrorText error={invite.error} />
          {notice && (
            <div role="status" className="secret">
              {notice.sent ? (
                <p>{t('inviteSent')}</p>
              ) : (
                <>
                  <p>{t('inviteLink')}</p>
                  <output data-testid="invite-url">{notice.url}</output>
                </>
              )}
            </div>
          )}
        </section>
      ) : (
        <p>{t('readOnly')}</p>
      )}
      <ErrorText error={team.error ?? change.error ?? remove.error} />
      <table>
        <thead>
          <tr>
            <th scope="col">{t('name')}</th>
            <th scope="col">{t('email')}</th>
            <th scope="col">{t('role')}</th>
            <th scope="col">{t('status')}</th>
            <th scope="col">{t('lastActive')}</th>
            {manage && <th scope="col">{t('remove')}</th>}
          </tr>
        </thead>
        <tbody>
          {team.data?.members.map((member) => (
            <tr key={member.id}>
              <td>{member.name || '–'}</td>
              <td>{member.email}</td>
              <td>
                {manage && member.id !== session.user.id ? (
                  <select
                    aria-label={`${t('role')}: ${member.email}`}
                    value={member.role}
                    onChange={(e) => change.mutate({ id: member.id, role: e.target.value as Role })}
                  >
                    {ROLES.map((r) => (
                      <option key={r} value={r}>
                        {t(r)}
                      </option>
                    ))}
                  </select>
                ) : (
                  t(member.role)
                )}
              </td>
              <td>{member.status === 'invited' ? t('invited') : t('active')}</td>
              <td>{formatTime(member.last_active_at, language, t('never'))}</td>
              {manage && (
                <td>
                  {member.id !== session.user.id && (
                    <button
                      type="button"
                      aria-label={`${t('remove')}: ${member.email}`}
                      onClick={() => {
                        if (window.confirm(t('confirmRemove'))) remove.mutate(member.id)
                      }}
                    >
                      {t('remove')}
                    </button>
                  )}
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </main>
  )
}
