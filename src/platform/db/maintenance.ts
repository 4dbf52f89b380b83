import { sql } from 'drizzle-orm'
import type { Config } from '../../config.ts'
import type { Clock } from '../clock.ts'
import type { Database, Db, Queryable } from './client.ts'

async function rows<T>(session: Queryable, text: string, params: unknown[] = []): Promise<T[]> {
  return (await session.query<T>(text, params)).rows
}

/**
 * The database does not look after itself here: PGlite has no autovacuum, and a PostgreSQL server may run without
 * it. Herold analyzes what it bulk-loads (analyzeTables, right after the load) and runs its own upkeep (maintain):
 * retention of finished records, then VACUUM and ANALYZE of the tables whose rows churn, when the database does not.
 */

/** Tables whose rows are written and deleted all day: they need vacuuming and fresh statistics. */
export const CHURN_TABLES = [
  'jobs',
  'idempotency_keys',
  'webhook_deliveries',
  'webhook_delivery_attempts',
  'template_sends',
  'events',
  'sandbox_outbox',
  'automation_runs',
  'email_optin_tokens',
  'oauth_access_tokens',
  'tool_confirmations',
] as const

const KNOWN_TABLE = /^[a-z_][a-z0-9_]*$/

/**
 * After a bulk write: ANALYZE, so the planner knows the new rows from the first query (an index, not a scan), and
 * the GIN indexes' pending lists moved into the indexes, so a search does not read up to 4 MB of unsorted entries
 * (gin_pending_list_limit) on every query until a VACUUM that PGlite, or a server without autovacuum, never runs.
 */
export async function analyzeTables(db: Db, tables: readonly string[]): Promise<void> {
  const names = tables.filter((t) => KNOWN_TABLE.test(t))
  if (names.length === 0) return
  await db.execute(sql.raw(`ANALYZE ${names.join(', ')}`))
  await db.execute(sql.raw(flushGinSql(names)))
}

/** SELECT that moves the pending entries of every GIN index on these tables into the index proper. */
function flushGinSql(tables: readonly string[]): string {
  return `SELECT gin_clean_pending_list(i.indexrelid) FROM pg_index i
    JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
    JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE am.amname = 'gin' AND n.nspname = current_schema() AND t.relname IN (${tables.map((t) => `'${t}'`).join(', ')})`
}

/** Tables outside the churn list whose GIN indexes take steady inserts (the contact search). */
const GIN_TABLES = ['contacts'] as const

/** Does the database vacuum and analyze by itself? Never on PGlite; on a server, when `autovacuum` is on. */
export async function databaseLooksAfterItself(database: Database): Promise<boolean> {
  if (database.kind === 'pglite') return false
  const [row] = await database.query<{ autovacuum: string }>('SHOW autovacuum')
  return row?.autovacuum === 'on'
}

export interface RetentionReport {
  deleted: Record<string, number>
  vacuumed: string[]
}

const DAY_MS = 24 * 3600_000

/**
 * Deletes what is finished and old: dead jobs, finished webhook deliveries and every delivery attempt after
 * `retentionDays`; idempotency records past their window; e-mail opt-in tokens and OAuth access tokens
 * `retentionDays` after they expired; the sandbox's outbox after `sandboxRetentionDays`. Consent records, events,
 * contacts and messages are never touched here.
 */
export async function applyRetention(
  database: Queryable,
  clock: Clock,
  periods: Pick<Config, 'retentionDays' | 'sandboxRetentionDays'>,
): Promise<Record<string, number>> {
  const now = clock.now().getTime()
  const before = new Date(now - periods.retentionDays * DAY_MS).toISOString()
  const sandboxBefore = new Date(now - periods.sandboxRetentionDays * DAY_MS).toISOString()
  const statements: Array<[string, string, unknown[]]> = [
    ['jobs', "DELETE FROM jobs WHERE state = 'dead' AND run_at < $1", [before]],
    ['webhook_delivery_attempts', 'DELETE FROM webhook_delivery_attempts WHERE attempted_at < $1', [before]],
    ['webhook_deliveries', "DELETE FROM webhook_deliveries WHERE state <> 'pending' AND finished_at < $1", [before]],
    ['idempotency_keys', 'DELETE FROM idempotency_keys WHERE expires_at <= $1', [new Date(now).toISOString()]],
    ['email_optin_tokens', 'DELETE FROM email_optin_tokens WHERE expires_at < $1', [before]],
    ['oauth_access_tokens', 'DELETE FROM oauth_access_tokens WHERE expires_at < $1', [before]],
    ['oauth_codes', 'DELETE FROM oauth_codes WHERE expires_at < $1', [before]],
    ['oauth_refresh_tokens', 'DELETE FROM oauth_refresh_tokens WHERE expires_at < $1', [before]],
    // a confirm_token is useless after its 10 minutes: nothing to keep
    ['tool_confirmations', 'DELETE FROM tool_confirmations WHERE expires_at <= $1', [new Date(now).toISOString()]],
    ['sandbox_outbox', 'DELETE FROM sandbox_outbox WHERE created_at < $1', [sandboxBefore]],
  ]
  const deleted: Record<string, number> = {}
  for (const [table, statement, params] of statements) {
    const [row] = await rows<{ n: number }>(
      database,
      `WITH gone AS (${statement} RETURNING 1) SELECT count(*)::int AS n FROM gone`,
      params,
    )
    deleted[table] = Number(row?.n ?? 0)
  }
  return deleted
}

/**
 * VACUUM (ANALYZE) of the churn tables that have dead rows or many changes since their last analyze; with
 * `everything` all of them (PGlite's statistics stay empty until a table is vacuumed, so they cannot tell).
 */
export async function vacuumChurnTables(
  database: Queryable,
  options: { everything?: boolean } = {},
): Promise<string[]> {
  if (options.everything) {
    for (const table of CHURN_TABLES) await database.query(`VACUUM (ANALYZE) ${table}`)
    return [...CHURN_TABLES]
  }
  const stats = await rows<{ relname: string; dead: number; changed: number; live: number }>(
    database,
    `SELECT relname, n_dead_tup::int AS dead, n_mod_since_analyze::int AS changed, n_live_tup::int AS live
     FROM pg_stat_user_tables WHERE relname = ANY($1::text[])`,
    [`{${CHURN_TABLES.join(',')}}`],
  )
  const due = stats.filter((s) => s.dead > 50 + 0.1 * s.live || s.changed > 50 + 0.1 * s.live).map((s) => s.relname)
  for (const table of due) await database.query(`VACUUM (ANALYZE) ${table}`)
  return due
}

/** One upkeep run: retention always; vacuum and analyze unless the database does them itself. */
export async function maintain(
  database: Queryable,
  clock: Clock,
  config: Pick<Config, 'retentionDays' | 'sandboxRetentionDays'>,
  options: { vacuum: boolean; everything?: boolean },
): Promise<RetentionReport> {
  const deleted = await applyRetention(database, clock, config)
  const vacuumed = options.vacuum ? await vacuumChurnTables(database, { everything: options.everything }) : []
  if (options.vacuum) await database.query(flushGinSql(GIN_TABLES))
  return { deleted, vacuumed }
}

/** How often upkeep runs, and the advisory lock that lets one process at a time do it. */
export const MAINTENANCE_EVERY_MS = 10 * 60_000
const MAINTENANCE_LOCK = 727_002
const STATE_KEY = 'maintenance'

/**
 * The maintenance worker of a process: every minute it checks, under an advisory lock (one process at a time across
 * the deployment), whether the last run recorded in system_state is older than MAINTENANCE_EVERY_MS, and runs then.
 * The schedule survives restarts: a process that starts after a long pause runs at once.
 */
export function maintenanceWorker(
  deps: { database: Database; clock: Clock; config: Config },
  log: (message: string, data?: Record<string, unknown>) => void,
) {
  return async () => {
    const selfCare = await databaseLooksAfterItself(deps.database).catch(() => false)
    log(
      selfCare
        ? 'the database vacuums and analyzes by itself (autovacuum on): Herold runs retention only'
        : deps.database.kind === 'pglite'
          ? 'embedded database (no autovacuum): Herold vacuums and analyzes its busy tables itself every 10 minutes'
          : 'autovacuum is off on this server: Herold vacuums and analyzes its busy tables itself every 10 minutes',
    )
    let running: Promise<unknown> | null = null
    const tick = () => {
      running ??= runIfDue(deps, { vacuum: !selfCare, everything: deps.database.kind === 'pglite' })
        .then((report) => report && log('maintenance run', { ...report }))
        .catch((error: unknown) => log('maintenance failed', { error: (error as Error).message }))
        .finally(() => {
          running = null
        })
    }
    tick()
    const timer = setInterval(tick, 60_000)
    timer.unref()
    return async () => {
      clearInterval(timer)
      await running
    }
  }
}

/** Runs upkeep when it is due and no other process holds the lock; null when it did not run. */
export async function runIfDue(
  deps: { database: Database; clock: Clock; config: Config },
  options: { vacuum: boolean; everything?: boolean; force?: boolean },
): Promise<RetentionReport | null> {
  return deps.database.withSession(async (session) => {
    const [lock] = await rows<{ ok: boolean }>(session, 'SELECT pg_try_advisory_lock($1) AS ok', [MAINTENANCE_LOCK])
    if (!lock?.ok) return null
    try {
      const [state] = await rows<{ value: { last_run_at?: string } }>(
        session,
        'SELECT value FROM system_state WHERE key = $1',
        [STATE_KEY],
      )
      const last = state?.value.last_run_at ? Date.parse(state.value.last_run_at) : 0
      const now = deps.clock.now()
      if (!options.force && now.getTime() - last < MAINTENANCE_EVERY_MS) return null
      const report = await maintain(session, deps.clock, deps.config, options)
      await session.query(
        `INSERT INTO system_state (key, value, updated_at) VALUES ($1, $2::jsonb, now())
         ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
        [STATE_KEY, JSON.stringify({ last_run_at: now.toISOString(), ...report })],
      )
      return report
    } finally {
      await session.query('SELECT pg_advisory_unlock($1)', [MAINTENANCE_LOCK])
    }
  })
}
