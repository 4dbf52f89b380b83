import { randomBytes } from 'node:crypto'
import pg from 'pg'

/**
 * A fresh PostgreSQL database beside the one `sharedUrl` names (same server and user), for a test harness or a
 * benchmark that must not share its jobs with anyone; `drop` removes it.
 */
export async function createScratchDatabase(
  sharedUrl: string,
  prefix: string,
): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: sharedUrl })
    await client.connect()
    try {
      await client.query(statement)
    } finally {
      await client.end()
    }
  }
  await admin(`CREATE DATABASE ${name}`)
  const url = new URL(sharedUrl)
  url.pathname = `/${name}`
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) }
}
