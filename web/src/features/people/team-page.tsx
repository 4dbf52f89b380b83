import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useState } from 'react'
import { app, call } from '../../api/client.ts'
import { EnumOptions, ErrorText, Field, formatTime, handleSubmit, TextField } from '../../ui/components.tsx'
import { useEnum, useI18n, useWords } from '../../ui/i18n.tsx'
import type { SessionShape } from '../../ui/session.ts'
import { Table } from '../../ui/table.tsx'
import { teamQuery } from './queries.ts'
import { peopleWords } from './words.ts'

type Role = 'owner' | 'admin' | 'member' | 'viewer'
const ROLES: Role[] = ['owner', 'admin', 'member', 'viewer']

export function TeamPage({ session }: { session: SessionShape }) {
  const { language } = useI18n()
  const w = useWords(peopleWords)
  const say = useEnum()
  const queryClient = useQueryClient()
  const manage = session.permissions.includes('team:manage')
  const [email, setEmail] = useState('')
  const [role, setRole] = useState<Role>('member')
  const [notice, setNotice] = useState<{ sent: boolean; url?: string } | null>(null)
  const team = useQuery(teamQuery)
  const refresh = () => queryClient.invalidateQueries({ queryKey: teamQuery.queryKey })
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
      <h1>{w.team}</h1>
      {manage ? (
        <section aria-labelledby="invite">
          <h2 id="invite">{w.invite}</h2>
          <form className="inline" onSubmit={handleSubmit(() => invite.mutate())}>
            <TextField label={w.email} type="email" required value={email} onChange={setEmail} />
            <Field label={w.role}>
              <select value={role} onChange={(e) => setRole(e.target.value as Role)}>
                <EnumOptions kind="role" values={ROLES} />
              </select>
            </Field>
            <button type="submit" disabled={invite.isPending}>
              {w.invite}
            </button>
          </form>
          <ErrorText error={invite.error} />
          {notice && (
            <div role="status" className="secret">
              {notice.sent ? (
                <p>{w.inviteSent}</p>
              ) : (
                <>
                  <p>{w.inviteLink}</p>
                  <output data-testid="invite-url">{notice.url}</output>
                </>
              )}
            </div>
          )}
        </section>
      ) : (
        <p>{w.readOnly}</p>
      )}
      <ErrorText error={team.error ?? change.error ?? remove.error} />
      <Table
        rows={team.data?.members}
        rowKey={(member) => member.id}
        columns={[
          [w.name, (member) => member.name || '–'],
          [w.email, (member) => member.email],
          [
            w.role,
            (member) =>
              manage && member.id !== session.user.id ? (
                <select
                  aria-label={`${w.role}: ${member.email}`}
                  value={member.role}
                  onChange={(e) => change.mutate({ id: member.id, role: e.target.value as Role })}
                >
                  <EnumOptions kind="role" values={ROLES} />
                </select>
              ) : (
                say('role', member.role)
              ),
          ],
          [w.status, (member) => (member.status === 'invited' ? w.invited : w.active)],
          [w.lastActive, (member) => formatTime(member.last_active_at, language, w.never)],
          manage && [
            w.remove,
            (member) =>
              member.id !== session.user.id && (
                <button
                  type="button"
                  aria-label={`${w.remove}: ${member.email}`}
                  onClick={() => {
                    if (window.confirm(w.confirmRemove)) remove.mutate(member.id)
                  }}
                >
                  {w.remove}
                </button>
              ),
          ],
        ]}
      />
    </main>
  )
}
