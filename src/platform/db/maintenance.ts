import { sql } from 'drizzle-orm'
import type { Config } from '../../config.ts'
import type { Clock } from '../clock.ts'
import type { Database, Db, Queryable } from './client.ts'
import { rows } from './rows.ts'

/**
 * The database does not look after itself here: PGlite has no autovacuum, and a PostgreSQL server may run without
 * it. Herold analyzes what it bulk-loads (analyzeTables, right after the load) and runs its own upkeep (maintain):
 * retention of finished records, then VACUUM and ANALYZE of the tables whose rows churn, when the database does not.
 * Each owner of tables declares their upkeep (a Retention), the platform's parts too (the job queue, idempotency, auth,
 * events); maintenance writes none of their tables, it runs what they declare (src/retention.ts lists them).
 */

/** Where a retention rule's cutoff lies: `retentionDays` ago, `sandboxRetentionDays` ago, or now. */
export type RetentionCutoff = 'retention' | 'sandbox' | 'now'

export interface RetentionRule {
  /** the table the statement deletes from: the run's report counts its rows under this name */
  table: string
  /** a DELETE whose one parameter, $1, is the cutoff as an ISO timestamp */
  statement: string
  cutoff: RetentionCutoff
}

/** What an owner of tables declares for upkeep; the owner's tables only. */
export interface Retention {
  /** what is finished and old enough to go, in the order the statements run */
  deletes?: RetentionRule[]
  /** tables whose rows are written and deleted all day: they need vacuuming and fresh statistics */
  churn?: string[]
  /** tables outside the churn list whose GIN indexes take steady inserts (a search) */
  gin?: string[]
}

/** The churn tables of every declaration, each once. */
export function churnTables(declared: readonly Retention[]): string[] {
  return [...new Set(declared.flatMap((r) => r.churn ?? []))].filter((t) => KNOWN_TABLE.test(t))
}

function ginTables(declared: readonly Retention[]): string[] {
  return [...new Set(declared.flatMap((r) => r.gin ?? []))].filter((t) => KNOWN_TABLE.test(t))
}

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

/** Does the database vacuum and analyze by itself? Never on PGlite; on a server, when `autovacuum` is on. */
export async function databaseLooksAfterItself(database: Database): Promise<boolean> {
  if (database.kind === 'pglite') return false
  const [row] = await database.query<{ autovacuum: string }>('SHOW autovacuum')
  return row?.autovacuum === 'on'
}

/**
 * Does the database vacuum this table by itself? Never on PGlite; on a server, when autovacuum runs (`autovacuum` and
 * the `track_counts` it needs are on) and the table does not opt out (`autovacuum_enabled` off in its options).
 */
export async function tableLooksAfterItself(database: Database, table: string): Promise<boolean> {
  if (database.kind === 'pglite') return false
  const [row] = await database.query<{ on: boolean }>(
    `SELECT current_setting('autovacuum') = 'on' AND current_setting('track_counts') = 'on'
       AND NOT EXISTS (SELECT 1 FROM pg_class c, pg_options_to_table(c.reloptions) o
         WHERE c.oid = to_regclass($1) AND o.option_name = 'autovacuum_enabled'
           AND lower(o.option_value) IN ('false', 'off', 'no', '0')) AS on`,
    [table],
  )
  return row?.on === true
}

export interface RetentionReport {
  deleted: Record<string, number>
  vacuumed: string[]
}

const DAY_MS = 24 * 3600_000

/**
 * Deletes what is finished and old, as the owners of tables declare (dead jobs, idempotency records past their
 * window, expired OAuth access tokens, finished deliveries, tokens and outboxes); in the order declared. Consent records, events, contacts and messages are never touched here.
 */
export async function applyRetention(
  database: Queryable,
  clock: Clock,
  periods: Pick<Config, 'retentionDays' | 'sandboxRetentionDays'>,
  declared: readonly Retention[],
): Promise<Record<string, number>> {
  const now = clock.now().getTime()
  const cutoffs: Record<RetentionCutoff, string> = {
    retention: new Date(now - periods.retentionDays * DAY_MS).toISOString(),
    sandbox: new Date(now - periods.sandboxRetentionDays * DAY_MS).toISOString(),
    now: new Date(now).toISOString(),
  }
  const deleted: Record<string, number> = {}
  for (const rule of declared.flatMap((r) => r.deletes ?? [])) {
    const [row] = rows<{ n: number }>(
      await database.query(`WITH gone AS (${rule.statement} RETURNING 1) SELECT count(*)::int AS n FROM gone`, [
        cutoffs[rule.cutoff],
      ]),
    )
    deleted[rule.table] = Number(row?.n ?? 0)
  }
  return deleted
}

/**
 * VACUUM (ANALYZE) of the churn tables that have dead rows or many changes since their last analyze; with
 * `everything` all of them (PGlite's statistics stay empty until a table is vacuumed, so they cannot tell).
 */
export async function vacuumChurnTables(
  database: Queryable,
  tables: readonly string[],
  options: { everything?: boolean } = {},
): Promise<string[]> {
  if (options.everything) {
    for (const table of tables) await database.query(`VACUUM (ANALYZE) ${table}`)
    return [...tables]
  }
  const stats = rows<{ relname: string; dead: number; changed: number; live: number }>(
    await database.query(
      `SELECT relname, n_dead_tup::int AS dead, n_mod_since_analyze::int AS changed, n_live_tup::int AS live
       FROM pg_stat_user_tables WHERE relname = ANY($1::text[])`,
      [`{${tables.join(',')}}`],
    ),
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
  declared: readonly Retention[],
  options: { vacuum: boolean; everything?: boolean },
): Promise<RetentionReport> {
  const deleted = await applyRetention(database, clock, config, declared)
  const churn = churnTables(declared)
  const vacuumed = options.vacuum ? await vacuumChurnTables(database, churn, { everything: options.everything }) : []
  const gin = ginTables(declared)
  if (options.vacuum && gin.length > 0) await database.query(flushGinSql(gin))
  return { deleted, vacuumed }
}

/** How often upkeep runs, and the advisory lock that lets one process at a time do it. */
export const MAINTENANCE_EVERY_MS = 10 * 60_000
const MAINTENANCE_LOCK = 727_002
const STATE_KEY = 'maintenance'

/** Whoever starts maintenance hands it the retention the owners of tables declare (platform parts, modules, tool server). */
export interface MaintenanceDeps {
  database: Database
  clock: Clock
  config: Config
  retention: readonly Retention[]
}

/**
 * The maintenance worker of a process: every minute it checks, under an advisory lock (one process at a time across
 * the deployment), whether the last run recorded in system_state is older than MAINTENANCE_EVERY_MS, and runs then.
 * The schedule survives restarts: a process that starts after a long pause runs at once.
 */
export function maintenanceWorker(
  deps: MaintenanceDeps,
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
  deps: MaintenanceDeps,
  options: { vacuum: boolean; everything?: boolean; force?: boolean },
): Promise<RetentionReport | null> {
  return deps.database.withSession(async (session) => {
    const [lock] = rows<{ ok: boolean }>(
      await session.query('SELECT pg_try_advisory_lock($1) AS ok', [MAINTENANCE_LOCK]),
    )
    if (!lock?.ok) return null
    try {
      const [state] = rows<{ value: { last_run_at?: string } }>(
        await session.query('SELECT value FROM system_state WHERE key = $1', [STATE_KEY]),
      )
      const last = state?.value.last_run_at ? Date.parse(state.value.last_run_at) : 0
      const now = deps.clock.now()
      if (!options.force && now.getTime() - last < MAINTENANCE_EVERY_MS) return null
      const report = await maintain(session, deps.clock, deps.config, deps.retention, options)
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
