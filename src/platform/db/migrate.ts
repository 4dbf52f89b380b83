import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Database } from './client.ts'

const migrationsDir = fileURLToPath(new URL('../../../db/migrations/', import.meta.url))
// Any constant shared by every Herold process: two servers starting on one database take turns.
const MIGRATION_LOCK = 727_001

interface JournalEntry {
  tag: string
}

function readMigrations(): { tag: string; statements: string[] }[] {
  const journal = JSON.parse(readFileSync(path.join(migrationsDir, 'meta/_journal.json'), 'utf8')) as {
    entries: JournalEntry[]
  }
  return journal.entries.map(({ tag }) => ({
    tag,
    statements: readFileSync(path.join(migrationsDir, `${tag}.sql`), 'utf8')
      .split('--> statement-breakpoint')
      .map((s) => s.trim())
      .filter((s) => s.length > 0),
  }))
}

/** Applies the committed migrations that are missing, each in its own transaction, under an advisory lock. */
export async function migrate(db: Database): Promise<string[]> {
  const migrations = readMigrations()
  return db.withSession(async (session) => {
    await session.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK])
    try {
      await session.query(
        'CREATE TABLE IF NOT EXISTS herold_migrations (tag text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
      )
      const { rows } = await session.query<{ tag: string }>('SELECT tag FROM herold_migrations')
      const applied = new Set(rows.map((r) => r.tag))
      const ran: string[] = []
      for (const migration of migrations) {
        if (applied.has(migration.tag)) continue
        await session.query('BEGIN')
        try {
          for (const statement of migration.statements) await session.query(statement)
          await session.query('INSERT INTO herold_migrations (tag) VALUES ($1)', [migration.tag])
          await session.query('COMMIT')
        } catch (error) {
          await session.query('ROLLBACK')
          throw new Error(`migration ${migration.tag} failed: ${(error as Error).message}`)
        }
        ran.push(migration.tag)
      }
      return ran
    } finally {
      await session.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK])
    }
  })
}
