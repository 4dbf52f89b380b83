import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import type { Clock } from '../clock.ts'
import type { Database } from '../db/client.ts'

/** How often a process marks itself seen; a row older than STALE_AFTER_MS is a process that died. */
export const SEEN_EVERY_MS = 30_000
export const STALE_AFTER_MS = 90_000
/** rows of processes gone this long are removed by the next process that marks itself seen */
const FORGET_AFTER_MS = 24 * 3600_000

export interface ProcessRow {
  id: string
  role: string
  host: string
  pid: number
  url: string | null
  database: string
  started_at: string
  seen_at: string
  alive: boolean
}

/**
 * Registers this process in herold_processes until the returned stop: a row at the start, `seen_at` moved every
 * SEEN_EVERY_MS (one UPDATE, the only statement an idle process adds), the row removed at a graceful stop.
 */
export async function registerProcess(
  database: Database,
  clock: Clock,
  input: { role: string; url: string | null },
): Promise<() => Promise<void>> {
  const id = randomUUID()
  const now = clock.now().toISOString()
  // an embedded database has one process: a row not seen lately is of one that died (or came with a restored backup)
  if (database.kind === 'pglite') {
    await database.query('DELETE FROM herold_processes WHERE seen_at < $1', [
      new Date(clock.now().getTime() - STALE_AFTER_MS).toISOString(),
    ])
  }
  await database.query(
    `INSERT INTO herold_processes (id, role, host, pid, url, database, started_at, seen_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`,
    [id, input.role, hostname(), process.pid, input.url, database.kind === 'pglite' ? 'embedded' : 'postgres', now],
  )
  let beat: Promise<unknown> | null = null
  const timer = setInterval(() => {
    const at = clock.now()
    beat ??= database
      .query(
        `WITH seen AS (UPDATE herold_processes SET seen_at = $2 WHERE id = $1)
         DELETE FROM herold_processes WHERE seen_at < $3`,
        [id, at.toISOString(), new Date(at.getTime() - FORGET_AFTER_MS).toISOString()],
      )
      .catch(() => {})
      .finally(() => {
        beat = null
      })
  }, SEEN_EVERY_MS)
  timer.unref()
  return async () => {
    clearInterval(timer)
    await beat
    await database.query('DELETE FROM herold_processes WHERE id = $1', [id]).catch(() => {})
  }
}

/** The registered processes, newest first, each alive when seen within STALE_AFTER_MS. */
export async function listProcesses(database: Database, clock: Clock): Promise<ProcessRow[]> {
  const rows = await database.query<Omit<ProcessRow, 'alive'> & { started_at: Date | string; seen_at: Date | string }>(
    'SELECT id, role, host, pid, url, database, started_at, seen_at FROM herold_processes ORDER BY started_at DESC',
  )
  const now = clock.now().getTime()
  return rows.map((r) => ({
    ...r,
    pid: Number(r.pid),
    started_at: new Date(r.started_at).toISOString(),
    seen_at: new Date(r.seen_at).toISOString(),
    alive: now - new Date(r.seen_at).getTime() <= STALE_AFTER_MS,
  }))
}
