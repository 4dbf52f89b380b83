import type { Static } from 'typebox'
import type { Clock } from '../../platform/clock.ts'
import type { Database } from '../../platform/db/client.ts'
import { notFound } from '../../platform/http/errors.ts'
import { type Day, RANGES, type Range, SEND_STATES, type StatsResponse } from './stats.schemas.ts'

type DayStats = Static<typeof Day>
type Stats = Static<typeof StatsResponse>['stats']
type Tenant = { accountId: string }

const OPTIN_STATES = ['none', 'pending', 'confirmed', 'opted_out'] as const
/** Rows moved per rollup statement; the worker repeats while a batch comes back full. */
export const ROLLUP_BATCH = 50_000
export const ROLLUP_EVERY_MS = 5_000

function emptyDay(date: string): DayStats {
  const sends = () => Object.fromEntries(SEND_STATES.map((s) => [s, 0]))
  return {
    date,
    contacts_new: 0,
    optins_confirmed: { chat: 0, email: 0 },
    opt_outs: { chat: 0, email: 0 },
    messages_in: 0,
    messages_out: 0,
    template_sends: sends(),
    newsletter_sends: sends(),
    link_clicks: 0,
    automation_runs: 0,
    followup_runs: 0,
    ai_replies: 0,
  }
}

/** Adds one counter (a metric name written by the triggers of migration 0029) to a day's series. */
function addMetric(day: Omit<DayStats, 'date'>, metric: string, n: number): void {
  const [a, b, c] = metric.split('.')
  if (metric === 'contacts.new') day.contacts_new += n
  else if (metric === 'messages.in') day.messages_in += n
  else if (metric === 'messages.out') day.messages_out += n
  else if (metric === 'ai.replies') day.ai_replies += n
  else if (metric === 'links.clicks') day.link_clicks += n
  else if (metric === 'runs.automation') day.automation_runs += n
  else if (metric === 'runs.followup') day.followup_runs += n
  else if (a === 'optins' && b === 'confirmed' && (c === 'chat' || c === 'email')) day.optins_confirmed[c] += n
  else if (a === 'optouts' && (b === 'chat' || b === 'email')) day.opt_outs[b] += n
  else if (a === 'sends' && c && c in day.template_sends) {
    if (b === 'newsletter') day.newsletter_sends[c] += n
    else day.template_sends[c] += n
  }
}

/** 'YYYY-MM-DD' plus whole days, calendar arithmetic only. */
export function addDays(date: string, days: number): string {
  const t = Date.parse(`${date}T00:00:00Z`) + days * 86_400_000
  return new Date(t).toISOString().slice(0, 10)
}

export function statsService(deps: { database: Database; clock: Clock }) {
  const { database, clock } = deps

  async function get(tenant: Tenant, range: Range): Promise<Stats> {
    const [account] = await database.query<{ timezone: string; today: string }>(
      `SELECT timezone, (($2::timestamptz) AT TIME ZONE timezone)::date::text AS today FROM accounts WHERE id = $1`,
      [tenant.accountId, clock.now().toISOString()],
    )
    if (!account) throw notFound('account')
    const to = account.today
    const from = addDays(to, -(RANGES[range] - 1))
    // Rolled-up counters plus the changes not yet rolled up; a snapshot sees each change in exactly one of them.
    const rows = await database.query<{ day: string | null; metric: string; n: string | number }>(
      `SELECT day::text AS day, metric, sum(n)::bigint AS n FROM (
         SELECT day, metric, n FROM stats_daily WHERE account_id = $1 AND day BETWEEN $2::date AND $3::date
         UNION ALL
         SELECT NULL::date, metric, n FROM stats_totals WHERE account_id = $1
         UNION ALL
         SELECT day, metric, n FROM stats_deltas
           WHERE account_id = $1 AND (day IS NULL OR day BETWEEN $2::date AND $3::date)
       ) x GROUP BY 1, 2`,
      [tenant.accountId, from, to],
    )
    const days = new Map<string, DayStats>()
    for (let d = from; d <= to; d = addDays(d, 1)) days.set(d, emptyDay(d))
    const totals: Record<string, number> = {}
    for (const row of rows) {
      const n = Number(row.n)
      if (row.day === null) totals[row.metric] = n
      else {
        const day = days.get(row.day)
        if (day) addMetric(day, row.metric, n)
      }
    }
    const sum = emptyDay('')
    for (const day of days.values()) {
      for (const [metric, n] of Object.entries(metricsOf(day))) addMetric(sum, metric, n)
    }
    const { date: _, ...summed } = sum
    const perState = (channel: string) =>
      Object.fromEntries(OPTIN_STATES.map((s) => [s, Math.max(0, totals[`contacts.optin_${channel}.${s}`] ?? 0)]))
    return {
      range,
      timezone: account.timezone,
      from,
      to,
      contacts: {
        total: Math.max(0, totals['contacts.total'] ?? 0),
        new_in_range: summed.contacts_new,
        optin_chat: perState('chat'),
        optin_email: perState('email'),
      },
      totals: summed,
      days: [...days.values()],
    }
  }

  /**
   * Moves up to ROLLUP_BATCH changes into the counters in one statement; returns how many moved. Safe to run from
   * several processes at once: each takes rows the others have not locked, and the counters add up either way.
   */
  async function rollup(): Promise<number> {
    const [row] = await database.query<{ moved: number }>(
      `WITH moved AS (
         DELETE FROM stats_deltas WHERE ctid = ANY(ARRAY(
           SELECT ctid FROM stats_deltas LIMIT ${ROLLUP_BATCH} FOR UPDATE SKIP LOCKED))
         RETURNING account_id, day, metric, n
       ), live AS (
         SELECT m.* FROM moved m WHERE EXISTS (SELECT 1 FROM accounts a WHERE a.id = m.account_id)
       ), daily AS (
         INSERT INTO stats_daily (account_id, day, metric, n)
         SELECT account_id, day, metric, sum(n) FROM live WHERE day IS NOT NULL
         GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
         ON CONFLICT (account_id, day, metric) DO UPDATE SET n = stats_daily.n + EXCLUDED.n
         RETURNING 1
       ), totals AS (
         INSERT INTO stats_totals (account_id, metric, n)
         SELECT account_id, metric, sum(n) FROM live WHERE day IS NULL
         GROUP BY 1, 2 ORDER BY 1, 2
         ON CONFLICT (account_id, metric) DO UPDATE SET n = stats_totals.n + EXCLUDED.n
         RETURNING 1
       )
       SELECT (SELECT count(*) FROM moved)::int AS moved, (SELECT count(*) FROM daily) + (SELECT count(*) FROM totals) AS written`,
    )
    return Number(row?.moved ?? 0)
  }

  /** Rolls up until nothing is left (a batch comes back less than full); a cheap look first, nothing when idle. */
  async function rollupAll(): Promise<number> {
    const [pending] = await database.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM stats_deltas) AS any')
    if (!pending?.any) return 0
    let total = 0
    for (;;) {
      const moved = await rollup()
      total += moved
      if (moved < ROLLUP_BATCH) return total
    }
  }

  return { get, rollup, rollupAll }
}

/** The metric names and counts a day's series holds (the inverse of addMetric, for summing days). */
function metricsOf(day: DayStats): Record<string, number> {
  const out: Record<string, number> = {
    'contacts.new': day.contacts_new,
    'messages.in': day.messages_in,
    'messages.out': day.messages_out,
    'ai.replies': day.ai_replies,
    'links.clicks': day.link_clicks,
    'runs.automation': day.automation_runs,
    'runs.followup': day.followup_runs,
    'optins.confirmed.chat': day.optins_confirmed.chat,
    'optins.confirmed.email': day.optins_confirmed.email,
    'optouts.chat': day.opt_outs.chat,
    'optouts.email': day.opt_outs.email,
  }
  for (const s of SEND_STATES) {
    out[`sends.template.${s}`] = day.template_sends[s] ?? 0
    out[`sends.newsletter.${s}`] = day.newsletter_sends[s] ?? 0
  }
  return out
}

export type StatsService = ReturnType<typeof statsService>
