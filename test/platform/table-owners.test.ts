import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

/**
 * Each table is written only by the part of Herold that declares it (a module, a platform part, the tool server):
 * the rest reach it through what its owner exports. Read from the source: every `pgTable('name')` of a
 * `*.tables.ts` file names a table and its owner (the file's folder), and every write to a table (an INSERT, UPDATE
 * or DELETE in raw SQL, or a query-builder insert/update/delete of its table object) must stand in a file of that
 * folder. Reads are free: a statement may join another module's table.
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const src = path.join(root, 'src')

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(full)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [full] : []
  })
}

interface Table {
  name: string
  /** the JavaScript name of its table object */
  binding: string
  /** the folder of its owner, relative to src/ */
  owner: string
}

function declaredTables(files: string[]): Table[] {
  const tables: Table[] = []
  for (const file of files.filter((f) => f.endsWith('.tables.ts'))) {
    const text = readFileSync(file, 'utf8')
    for (const match of text.matchAll(/export const (\w+) = pgTable\(\s*'(\w+)'/g)) {
      tables.push({ binding: match[1]!, name: match[2]!, owner: path.relative(src, path.dirname(file)) })
    }
  }
  return tables
}

/** Every write a file makes: `[table name or binding, line]`. */
function writesOf(text: string): Array<{ target: string; line: number; builder: boolean }> {
  const writes: Array<{ target: string; line: number; builder: boolean }> = []
  const lineOf = (index: number) => text.slice(0, index).split('\n').length
  for (const match of text.matchAll(/\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+"?(\w+)"?/g)) {
    writes.push({ target: match[1]!, line: lineOf(match.index), builder: false })
  }
  for (const match of text.matchAll(/\.(?:insert|update|delete)\(\s*(\w+)\s*\)/g)) {
    writes.push({ target: match[1]!, line: lineOf(match.index), builder: true })
  }
  return writes
}

/**
 * Who may write a table of `owner`: the owner's own folder, the platform's parts too (platform/jobs alone writes
 * `jobs`; maintenance runs the deletes each owner declares, it writes no table itself). Two exceptions, by name:
 * system_state, the platform's key-value store of process-wide facts (one key per writer: bootstrap's first start,
 * maintenance's last run), which any platform part may write; and the identity tables of platform/auth (accounts,
 * people, sessions, keys, OAuth tokens), also written by the modules that manage them (people, account) and the tool
 * server's OAuth: they are the platform's so that every request's authentication reads them without loading a module.
 */
function mayWrite(file: string, table: Table): boolean {
  const within = (folder: string) => file.startsWith(`${folder}${path.sep}`)
  if (within(table.owner)) return true
  if (table.name === 'system_state') return within('platform')
  if (table.owner === 'platform/auth') return within('modules/people') || within('modules/account') || within('mcp')
  return false
}

test('every table is written only by the module or platform part that declares it', () => {
  const files = sourceFiles(src)
  const tables = declaredTables(files)
  assert.ok(tables.length > 40, `found only ${tables.length} tables`)
  const byName = new Map(tables.map((t) => [t.name, t]))
  const byBinding = new Map(tables.map((t) => [t.binding, t]))
  const strangers: string[] = []
  for (const file of files) {
    const relative = path.relative(src, file)
    const text = readFileSync(file, 'utf8')
    for (const write of writesOf(text)) {
      const table = write.builder ? byBinding.get(write.target) : byName.get(write.target)
      if (!table) continue
      if (mayWrite(relative, table)) continue
      strangers.push(`${relative}:${write.line} writes ${table.name} (owned by ${table.owner})`)
    }
  }
  assert.deepEqual(strangers, [], `tables written outside their owner:\n${strangers.join('\n')}`)
})

test('platform tables are owned too: a platform part writing another part’s table is a stranger', () => {
  const jobs: Table = { name: 'jobs', binding: 'jobs', owner: 'platform/jobs' }
  assert.equal(mayWrite(path.join('platform', 'jobs', 'jobs.ts'), jobs), true)
  assert.equal(mayWrite(path.join('platform', 'db', 'maintenance.ts'), jobs), false)
  assert.equal(mayWrite(path.join('modules', 'inbox', 'inbox.service.ts'), jobs), false)
})

test('the check finds a stranger write (so it cannot pass by reading nothing)', () => {
  const writes = writesOf('await tx.execute(sql`UPDATE jobs SET state = 1`)\nawait db.insert(templateSends).values(x)')
  assert.deepEqual(
    writes.map((w) => [w.target, w.line, w.builder]),
    [
      ['jobs', 1, false],
      ['templateSends', 2, true],
    ],
  )
})
