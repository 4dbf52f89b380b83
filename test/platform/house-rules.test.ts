import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { test } from 'node:test'

// One service shape (issue 46): a module's /app handlers and tools call its services; only services (and the
// repositories and workers under them) reach the database. A tool or web-app handler that queries a table itself
// would be a second way to do what a service does, with its own account scoping to get right.

const root = new URL('../../', import.meta.url).pathname
const src = join(root, 'src')

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)],
  )
}

const handlers = filesUnder(src).filter((file) => /\.(tools|app)\.ts$/.test(file))

/** What reaching the database looks like: the handle, the ORM, a table or a repository. */
const DATABASE = [
  { what: 'the database handle', pattern: /\.database\b|\bdb\(ctx\)/ },
  { what: 'the ORM', pattern: /from 'drizzle-orm'/ },
  { what: 'the database layer', pattern: /from '[./]*platform\/db\// },
  { what: 'a table', pattern: /from '[^']*\.tables\.ts'/ },
  { what: 'a repository', pattern: /from '[^']*\.repository\.ts'/ },
]

test('tools and web-app handlers call services only: none reaches the database', () => {
  assert.ok(handlers.length > 20, `the tools and /app files are found (${handlers.length})`)
  const found: string[] = []
  for (const file of handlers) {
    const lines = readFileSync(file, 'utf8').split('\n')
    lines.forEach((line, index) => {
      // a type names a shape; it reaches nothing
      if (line.startsWith('import type ')) return
      for (const { what, pattern } of DATABASE) {
        if (pattern.test(line)) found.push(`${relative(root, file)}:${index + 1} reaches ${what}: ${line.trim()}`)
      }
    })
  }
  assert.deepEqual(found, [])
})
