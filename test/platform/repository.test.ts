import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'

const root = path.resolve(import.meta.dirname, '../..')
const tracked = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean)

test('nothing in the repository refers to a path outside it (../shared); CI’s own script may', () => {
  const outside = tracked
    .filter((file) => !file.startsWith('.ci/') && !file.endsWith('package-lock.json'))
    .filter((file) => {
      try {
        return readFileSync(path.join(root, file), 'utf8').includes('../shared')
      } catch {
        return false
      }
    })
  assert.deepEqual(
    outside.filter((f) => f !== 'test/platform/repository.test.ts'),
    [],
  )
})

test('every document the README links exists', () => {
  const readme = readFileSync(path.join(root, 'README.md'), 'utf8')
  const links = [...readme.matchAll(/\]\((docs\/[^)#]+)/g)].map((m) => m[1])
  assert.ok(links.length >= 10)
  for (const link of links) assert.ok(tracked.includes(link), `${link} is in the repository`)
})
