import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { app, call } from '../../api/client.ts'
import { useWords } from '../../ui/i18n.tsx'
import { availabilityQuery } from './queries.ts'
import { words } from './words.ts'

/** The member's own available/away switch for automatic assignment (in the frame, beside signing out). */
export function AvailabilityToggle() {
  const w = useWords(words)
  const queryClient = useQueryClient()
  const availability = useQuery({ ...availabilityQuery, refetchInterval: 60_000 })
  const change = useMutation({
    mutationFn: (available: boolean) => call(app.PUT('/app/inbox/availability', { body: { available } })),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: availabilityQuery.queryKey }),
  })
  const me = availability.data?.me
  if (!me) return null
  return (
    <label className="check availability">
      <input
        type="checkbox"
        checked={me.available}
        disabled={change.isPending}
        onChange={(ev) => change.mutate(ev.target.checked)}
      />
      {w.toggleLabel}: {me.available ? w.toggleAvailable : w.toggleAway}
    </label>
  )
}
