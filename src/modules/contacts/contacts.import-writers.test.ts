import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, test } from 'node:test'
import { createTestAccount, type Harness } from '../../../test/helpers/harness.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import { type ImportReport, importContacts } from './index.ts'

// An import in batches, one after another or beside each other (importConcurrency: two on PostgreSQL), its file read
// here or on a thread of its own, ends as the import line by line: the same contacts, the same report. Small batches
// make many of them.

let harness: Harness
harnessPerFile((created) => {
  harness = created
})

function csv(text: string | Uint8Array): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'herold-import-writers-'))
  const name = path.join(dir, 'contacts.csv')
  writeFileSync(name, text)
  return name
}

/** A small seeded generator (mulberry32): the same file on every run. */
function random(seed: number): () => number {
  let state = seed
  return () => {
    state = (state + 0x6d2b79f5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * Lines whose addresses come from small pools, so later lines repeat, move and take over earlier lines' and the
 * existing contacts' addresses; a few are invalid (rejected) or carry a system tag (noted).
 */
function linesFile(seed: number, count: number): string {
  const next = random(seed)
  const pick = (n: number) => Math.floor(next() * n)
  const lines = ['name,email,phone,tags']
  for (let i = 0; i < count; i++) {
    const email = next() < 0.75 ? `p${pick(24)}@example.com` : ''
    const phone = next() < 0.6 || email === '' ? `+49 151 2345${String(6700 + pick(24))}` : ''
    const tag = ['', '', 'messe', 'vip', 'kunde'][pick(5)]
    const broken = next() < 0.04
    lines.push(`Name ${seed}-${i},${broken ? 'not-an-address' : email},${phone},${tag}`)
  }
  return `${lines.join('\n')}\n`
}

type Contact = { name: string; email: string; phone: string; optin_chat: string; tags: string }

async function contactsOf(accountId: string): Promise<Contact[]> {
  return harness.database.query<Contact>(
    `SELECT c.name, c.email, c.phone, c.optin_chat,
       coalesce((SELECT string_agg(t.name || '/' || t.origin, ',' ORDER BY t.name, t.origin) FROM contact_tags t
         WHERE t.account_id = c.account_id AND t.contact_id = c.id), '') AS tags
     FROM contacts c WHERE c.account_id = $1 ORDER BY c.email, c.phone, c.name`,
    [accountId],
  )
}

/** The report without its timing, a contact named in a reason by its addresses now (the accounts' ids differ). */
async function outcome(accountId: string, { seconds, rows_per_second, ...rest }: ImportReport) {
  const rows = await harness.database.query<{ id: string; label: string }>(
    `SELECT id, email || '|' || phone AS label FROM contacts WHERE account_id = $1`,
    [accountId],
  )
  const labels = new Map(rows.map((r) => [r.id, r.label]))
  const named = (reason: string) => reason.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, (id) => labels.get(id) ?? id)
  return { ...rest, rejected_lines: rest.rejected_lines.map((r) => ({ ...r, reason: named(r.reason) })) }
}

async function importInto(
  accountId: string,
  file: string,
  options: { writers?: number; batchSize?: number; readOnThread?: boolean },
) {
  return importContacts(harness.database.orm, harness.clock, { accountId, file, ...options })
}

const SEEDS = (process.env.HEROLD_TEST_IMPORT_SEEDS ?? '1,2,3,4,5').split(',').map(Number)

describe('an import in batches, and written by two writers', () => {
  for (const seed of SEEDS) {
    test(`ends as the import line by line (seed ${seed}): contacts, tags, report`, async () => {
      const seedFile = csv(linesFile(1000 + seed, 30))
      const file = csv(linesFile(seed, 80))
      const ways = [
        { writers: 1, batchSize: 1 },
        { writers: 1, batchSize: 4 },
        { writers: 1, batchSize: 5 },
        { writers: 2, batchSize: 4 },
        { writers: 1, batchSize: 4, readOnThread: true },
      ]
      const accounts = []
      for (const _ of ways) accounts.push(await createTestAccount(harness))
      // the same contacts exist before: some lines match them, move their addresses or take them over
      for (const account of accounts) await importInto(account.accountId, seedFile, { batchSize: 7 })
      const results = []
      for (const [i, way] of ways.entries()) {
        const report = await importInto(accounts[i].accountId, file, way)
        results.push({
          report: await outcome(accounts[i].accountId, report),
          contacts: await contactsOf(accounts[i].accountId),
        })
      }
      const [lineByLine, ...others] = results
      const { report } = lineByLine
      assert.ok(report.created > 0 && report.updated > 0 && report.rejected > 0, JSON.stringify(report))
      for (const [i, other] of others.entries()) assert.deepEqual(other, lineByLine, JSON.stringify(ways[i + 1]))
      // the plan's counter stays the number of contacts
      const [counted] = await harness.database.query<{ count: number; real: number }>(
        `SELECT (SELECT count FROM contact_counts WHERE account_id = $1) AS count,
           (SELECT count(*)::int FROM contacts WHERE account_id = $1) AS real`,
        [accounts[3].accountId],
      )
      assert.equal(counted.count, counted.real)
    })
  }

  test("at the plan's limit the same first lines are created and the same later ones refused", async () => {
    const lines = ['name,email']
    for (let i = 0; i < 50; i++) lines.push(`Kunde ${i},kunde${i}@example.com`)
    const file = csv(`${lines.join('\n')}\n`)
    const plan = { contacts: 30 }
    const [one, two] = [await createTestAccount(harness, { plan }), await createTestAccount(harness, { plan })]
    const alone = await importInto(one.accountId, file, { writers: 1, batchSize: 4 })
    const beside = await importInto(two.accountId, file, { writers: 2, batchSize: 4 })
    assert.equal(alone.created, 30)
    assert.equal(alone.rejected, 20)
    assert.match(alone.rejected_lines[0].reason, /limit of 30 contacts/)
    assert.deepEqual(await outcome(two.accountId, beside), await outcome(one.accountId, alone))
    assert.deepEqual(await contactsOf(two.accountId), await contactsOf(one.accountId))
  })
})

describe('an import file read on a thread of its own', () => {
  test('refuses a byte that is not UTF-8 after the first 64 KiB as the inline reader does, before anything is written', async () => {
    const lines = ['name,email']
    for (let i = 0; i < 3000; i++) lines.push(`Kunde ${i},kunde${i}@example.com`)
    const text = Buffer.from(`${lines.join('\n')}\n`)
    const file = csv(Buffer.concat([text, Buffer.from('Bj\xf6rn,bjoern@example.com\n', 'latin1')]))
    const refusals: string[] = []
    for (const readOnThread of [false, true]) {
      const account = await createTestAccount(harness)
      await assert.rejects(importInto(account.accountId, file, { readOnThread }), (error: Error) => {
        refusals.push(error.message)
        return /line 3002 is not UTF-8/.test(error.message)
      })
      assert.deepEqual(await contactsOf(account.accountId), [])
    }
    assert.equal(refusals[1], refusals[0])
  })

  test('a file that is not CSV stops the import with the same message as inline', async () => {
    const file = csv('name,email\n"Anna,anna@example.com\n')
    const refusals: string[] = []
    for (const readOnThread of [false, true]) {
      const account = await createTestAccount(harness)
      await assert.rejects(importInto(account.accountId, file, { readOnThread }), (error: Error) => {
        refusals.push(error.message)
        return /not valid CSV/.test(error.message)
      })
    }
    assert.equal(refusals[1], refusals[0])
  })

  test('a file with only its header imports nothing and reports it', async () => {
    const account = await createTestAccount(harness)
    const report = await importInto(account.accountId, csv('name,email\n'), { readOnThread: true })
    assert.equal(report.rows, 0)
    assert.equal(report.created, 0)
  })
})
