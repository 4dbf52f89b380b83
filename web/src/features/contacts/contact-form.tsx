import { useMutation, useQueryClient } from '@tanstack/react-query'
import { useState } from 'react'
import { app, call } from '../../api/client.ts'
import { ErrorText, handleSubmit, TextField } from '../../ui/components.tsx'
import { fill, useWords } from '../../ui/i18n.tsx'
import { useSession } from '../../ui/session.ts'
import { formWords } from './words.ts'

// A new contact on the contacts page (POST /app/contacts): a national phone number (0151 …) is read in the account's
// country and stored in international format, which the page then shows.

export function NewContactForm() {
  const w = useWords(formWords)
  const session = useSession()
  const queryClient = useQueryClient()
  const [name, setName] = useState('')
  const [email, setEmail] = useState('')
  const [phone, setPhone] = useState('')
  const save = useMutation({
    mutationFn: () =>
      call(
        app.POST('/app/contacts', {
          body: {
            ...(name.trim() ? { name: name.trim() } : {}),
            ...(email.trim() ? { email: email.trim() } : {}),
            ...(phone.trim() ? { phone: phone.trim() } : {}),
          },
        }),
      ),
    onSuccess: () => {
      setName('')
      setEmail('')
      setPhone('')
      void queryClient.invalidateQueries({ queryKey: ['contacts'] })
    },
  })
  if (!session.data?.scopes.includes('contacts:write')) return null
  return (
    <details>
      <summary>{w.newContact}</summary>
      <form onSubmit={handleSubmit(() => save.mutate())}>
        <TextField label={w.name} maxLength={120} value={name} onChange={setName} />
        <TextField label={w.email} type="email" maxLength={254} value={email} onChange={setEmail} />
        <TextField label={w.phone} maxLength={40} value={phone} onChange={setPhone} />
        <ErrorText error={save.error} />
        {save.data && <p role="status">{fill(w.created, { phone: save.data.contact.phone ?? '' })}</p>}
        <button type="submit" disabled={save.isPending}>
          {w.add}
        </button>
      </form>
    </details>
  )
}
