import { useQuery } from '@tanstack/react-query'
import { fill, useI18n, useWords } from '../../ui/i18n.tsx'
import { openingStateQuery } from './queries.ts'
import { words } from './words.ts'

/** The inbox's banner while the business is closed (opening hours switched on and outside them). */
export function AwayBanner() {
  const w = useWords(words)
  const { language } = useI18n()
  const state = useQuery({ ...openingStateQuery, refetchInterval: 60_000 })
  const s = state.data
  if (!s?.hours_enabled || s.open_now) return null
  const opens = s.opens_at
    ? new Intl.DateTimeFormat(language === 'de' ? 'de-DE' : 'en-GB', {
        weekday: 'short',
        hour: '2-digit',
        minute: '2-digit',
        timeZone: s.timezone,
      }).format(new Date(s.opens_at))
    : null
  return (
    <p className="notice away-banner" role="status" data-testid="away-banner">
      {opens ? fill(w.bannerOpens, { at: opens }) : w.banner} {s.away_enabled ? w.bannerAway : ''}
    </p>
  )
}
