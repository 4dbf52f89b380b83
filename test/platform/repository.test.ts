import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'

const root = path.resolve(import.meta.dirname, '../..')
const tracked = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean)

// the sibling directory the project was written beside, spelled so this file does not name it itself
const OUTSIDE = ['..', 'shared'].join('/')

test('nothing in the repository refers to the sibling spec directory outside it; CI’s own script may', () => {
  const outside = tracked
    .filter((file) => !file.startsWith('.ci/') && !file.endsWith('package-lock.json'))
    .filter((file) => {
      try {
        return readFileSync(path.join(root, file), 'utf8').includes(OUTSIDE)
      } catch {
        return false
      }
    })
  assert.deepEqual(outside, [])
})

test('every document the README links exists', () => {
  const readme = readFileSync(path.join(root, 'README.md'), 'utf8')
  const links = [...readme.matchAll(/\]\((docs\/[^)#]+)/g)].map((m) => m[1])
  assert.ok(links.length >= 10)
  for (const link of links) assert.ok(tracked.includes(link), `${link} is in the repository`)
})
