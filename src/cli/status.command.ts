import { systemClock } from '../platform/clock.ts'
import type { Database } from '../platform/db/client.ts'
import { loweredPaces } from '../platform/jobs/adaptive-pace.ts'
import { readQueueDepths } from '../platform/metrics/scrape.ts'
import { listProcesses } from '../platform/processes/processes.ts'
import type { DataCommand, Result } from './command.ts'

// herold status: what runs and what is stuck, on one screen (or --json). Read-only; every read is bounded: the queues
// by index probes, lists by LIMIT, the last hour's sends by their time.

const LIST_LIMIT = 10

async function lastHourSends(database: Database, since: Date) {
  // the send records that reached an outcome in the last hour, by origin and outcome, failures by reason: per
  // account a range of template_sends_outcome_idx (migration 0068), its expression written as the index has it
  return database.query<{ origin: string; status: string; reason: string | null; n: number }>(
    `SELECT s.origin, s.status, s.reason, count(*)::int AS n FROM accounts a
     CROSS JOIN LATERAL (SELECT origin, status, reason FROM template_sends
       WHERE account_id = a.id AND status IN ('sent', 'delivered', 'read', 'failed', 'skipped')
         AND coalesce(failed_at, skipped_at, sent_at) >= $1) s
     GROUP BY 1, 2, 3 ORDER BY n DESC`,
    [since.toISOString()],
  )
}

async function read(database: Database): Promise<Result> {
  const now = systemClock.now()
  const hourAgo = new Date(now.getTime() - 3600_000)
  const [processes, queues, sends, disabled, atLimit, paused, lowered] = await Promise.all([
    listProcesses(database, systemClock),
    readQueueDepths(database, systemClock),
    lastHourSends(database, hourAgo),
    database.query<{ account_id: string; id: string; reason: string | null; disabled_at: Date | string | null }>(
      `SELECT account_id, id, disabled_reason AS reason, disabled_at FROM webhook_subscriptions
       WHERE status = 'disabled' ORDER BY disabled_at DESC NULLS LAST LIMIT ${LIST_LIMIT + 1}`,
    ),
    database.query<{ account_id: string; limit: number; used: number }>(
      `SELECT c.account_id, c.daily_limit AS limit, w.used FROM channel_connections c
       CROSS JOIN LATERAL (SELECT count(*)::int AS used FROM (SELECT 1 FROM conversation_starts s
         WHERE s.account_id = c.account_id AND s.started_at > $1 LIMIT c.daily_limit) x) w
       WHERE c.channel = 'chat' AND c.status = 'connected' AND c.daily_limit IS NOT NULL AND w.used >= c.daily_limit
       ORDER BY c.account_id LIMIT ${LIST_LIMIT + 1}`,
      [new Date(now.getTime() - 24 * 3600_000).toISOString()],
    ),
    database.query<{ id: string; name: string }>(
      `SELECT id, name FROM accounts WHERE sending_paused ORDER BY created_at DESC LIMIT ${LIST_LIMIT + 1}`,
    ),
    loweredPaces(database.orm, LIST_LIMIT + 1),
  ])
  const total = (status: string) => sends.filter((s) => s.status === status).reduce((sum, s) => sum + s.n, 0)
  const reasons = new Map<string, number>()
  for (const s of sends.filter((x) => x.status === 'failed' || x.status === 'skipped')) {
    const key = `${s.status}: ${s.reason ?? 'unknown'}`
    reasons.set(key, (reasons.get(key) ?? 0) + s.n)
  }
  const cut = <T>(list: T[]) => ({ items: list.slice(0, LIST_LIMIT), more: list.length > LIST_LIMIT })
  return {
    at: now.toISOString(),
    database: database.kind === 'pglite' ? 'embedded' : 'postgres',
    processes,
    queues: queues.map((q) => ({
      queue: q.queue,
      queued: q.queued,
      running: q.running,
      oldest_due_seconds: Math.round(q.oldestDueSeconds),
    })),
    queue_count_cap: 10_000,
    sends_last_hour: {
      sent: total('sent') + total('delivered') + total('read'),
      failed: total('failed'),
      skipped: total('skipped'),
      by_reason: [...reasons].map(([reason, n]) => ({ reason, n })).sort((a, b) => b.n - a.n),
    },
    disabled_webhook_subscriptions: cut(
      disabled.map((d) => ({
        account_id: d.account_id,
        id: d.id,
        reason: d.reason,
        disabled_at: d.disabled_at ? new Date(d.disabled_at).toISOString() : null,
      })),
    ),
    numbers_at_daily_limit: cut(atLimit.map((a) => ({ account_id: a.account_id, limit: a.limit, used: a.used }))),
    sending_paused_accounts: cut(paused),
    // adaptive pace: numbers (lanes) below the pace they are set to, since and why
    paces_lowered: cut(
      lowered.map((p) => ({
        account_id: p.accountId,
        lane: p.lane,
        per_second: p.perSecond,
        full_per_second: p.fullPerSecond,
        reason: p.reducedReason,
        since: p.reducedAt?.toISOString() ?? null,
        last_refusal_at: p.lastRefusalAt?.toISOString() ?? null,
      })),
    ),
  }
}

const ago = (iso: string, now: string) => {
  const s = Math.max(0, Math.round((Date.parse(now) - Date.parse(iso)) / 1000))
  return s < 120 ? `${s} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${Math.round(s / 3600)} h`
}

type Listed<T> = { items: T[]; more: boolean }

function section<T>(title: string, listed: Listed<T>, line: (item: T) => string): string[] {
  if (listed.items.length === 0) return [`${title}: none`]
  return [`${title}:`, ...listed.items.map((item) => `  ${line(item)}`), ...(listed.more ? ['  … more (--json)'] : [])]
}

function human(r: Result): string {
  const processes = r.processes as Array<Record<string, string | number | boolean | null>>
  const queues = r.queues as Array<{ queue: string; queued: number; running: number; oldest_due_seconds: number }>
  const sends = r.sends_last_hour as { sent: number; failed: number; skipped: number; by_reason: Result[] }
  const at = String(r.at)
  const busy = queues.filter((q) => q.queued > 0 || q.running > 0)
  const count = (n: number) => (n >= Number(r.queue_count_cap) ? `${n}+` : String(n))
  return [
    `Herold status at ${at} (${r.database} database)`,
    '',
    processes.length === 0 ? 'Processes: none registered' : 'Processes:',
    ...processes.map(
      (p) =>
        `  ${String(p.role).padEnd(6)} ${p.host}:${p.pid}  ${p.url ?? 'no HTTP'}  up ${ago(String(p.started_at), at)}, seen ${ago(String(p.seen_at), at)} ago${p.alive ? '' : '  NOT SEEN (died?)'}`,
    ),
    '',
    busy.length === 0 ? 'Queues: all empty' : 'Queues (queued / running / oldest due waiting):',
    ...busy.map(
      (q) =>
        `  ${q.queue.padEnd(34)} ${count(q.queued).padStart(7)} ${count(q.running).padStart(7)}  ${q.oldest_due_seconds} s`,
    ),
    '',
    `Sends in the last hour: ${sends.sent} sent, ${sends.failed} failed, ${sends.skipped} skipped`,
    ...sends.by_reason.slice(0, 8).map((x) => `  ${String(x.n).padStart(7)}  ${x.reason}`),
    '',
    ...section(
      'Disabled webhook subscriptions',
      r.disabled_webhook_subscriptions as Listed<Result>,
      (d) => `${d.id} (account ${d.account_id}): ${d.reason ?? 'disabled'} since ${d.disabled_at ?? '?'}`,
    ),
    ...section(
      'Numbers at their daily limit',
      r.numbers_at_daily_limit as Listed<Result>,
      (n) => `account ${n.account_id}: ${n.used} of ${n.limit} new conversations in 24 hours`,
    ),
    ...section(
      'Numbers sending below their pace',
      r.paces_lowered as Listed<Result>,
      (p) =>
        `account ${p.account_id}: ${p.per_second} of ${p.full_per_second} messages a second, ${p.reason} since ${p.since ?? '?'}, last refusal ${p.last_refusal_at ?? '?'}`,
    ),
    ...section(
      'Accounts with sending paused',
      r.sending_paused_accounts as Listed<Result>,
      (a) => `${a.id}  ${a.name}`,
    ),
  ].join('\n')
}

export const statusCommand: DataCommand = {
  usage: '',
  summary:
    "Show what runs: processes and roles, queue depths and lag, the last hour's sends and failures by reason, disabled webhook subscriptions, numbers at their daily limit, numbers sending below their pace (after throughput refusals), accounts with sending paused",
  example: 'herold status\nherold status --json | jq .queues',
  run: (database) => read(database),
  human,
}
