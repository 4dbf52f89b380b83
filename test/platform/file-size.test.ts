import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

/**
 * No source file over 700 lines (issue 34): a file that long has seams to cut along (ports, rules, the parts, a
 * service that composes them). Read from the tree: every .ts and .tsx file under src/ (tests included) and web/src,
 * except the API types generated from the OpenAPI documents (web/src/api/*.ts).
 */

const MAX_LINES = 700
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const generated = path.join(root, 'web/src/api')

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return full === generated ? [] : sourceFiles(full)
    return /\.tsx?$/.test(entry.name) ? [full] : []
  })
}

/** Lines as `wc -l` counts them (a last line without its newline counts too). */
function linesOf(file: string): number {
  const text = readFileSync(file, 'utf8')
  if (text === '') return 0
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0)
}

test(`no source file under src/ or web/src is over ${MAX_LINES} lines`, () => {
  const files = [...sourceFiles(path.join(root, 'src')), ...sourceFiles(path.join(root, 'web/src'))]
  // the walk found the tree (an empty list would pass without looking)
  assert.ok(files.some((f) => f.endsWith(path.join('src', 'main.ts'))))
  assert.ok(files.some((f) => f.endsWith('.tsx')))
  const tooLong = files
    .map((file) => ({ file: path.relative(root, file), lines: linesOf(file) }))
    .filter((f) => f.lines > MAX_LINES)
    .map((f) => `${f.file} (${f.lines} lines)`)
  assert.deepEqual(tooLong, [], `cut these along their seams:\n${tooLong.join('\n')}`)
})

test('the generated API types are left out of the walk, and only they', () => {
  const web = sourceFiles(path.join(root, 'web/src'))
  assert.ok(!web.some((f) => f.startsWith(generated + path.sep)))
  assert.ok(web.some((f) => f.includes(`${path.sep}features${path.sep}`)))
  // the generated types are there to leave out (and long: the reason they are left out)
  assert.ok(readdirSync(generated).some((name) => name.endsWith('.ts')))
})
