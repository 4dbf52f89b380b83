import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { DOC_END, DOC_START, moduleTableMarkdown } from '../../scripts/module-table.ts'
import { mountedModules, REACTION_ORDER } from '../../src/services.ts'

/**
 * A module declares what it reacts to in its HeroldModule value (`reactions`), and the composition root
 * (src/services.ts) hands the reactions to the module that runs them: no module fills another's list when it is
 * imported. Read from the source: a statement at the top level of a file under src/modules/ that is a call (awaited
 * or not) fails when the function called is imported from outside the file's own module (another module, the
 * platform) or is named like a registration (register…, on…).
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const modulesDir = path.join(root, 'src/modules')

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(full)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [full] : []
  })
}

const REGISTRATION = /^(register|on)[A-Z]/

/** The name a call is made through: `f(…)` is f, `a.b.f(…)` is a (what was imported) and f (what is called). */
function calleeNames(expression: ts.Expression): { root: string | null; called: string | null } {
  if (ts.isIdentifier(expression)) return { root: expression.text, called: expression.text }
  if (ts.isPropertyAccessExpression(expression)) {
    let base: ts.Expression = expression.expression
    while (ts.isPropertyAccessExpression(base) || ts.isCallExpression(base)) base = base.expression
    return { root: ts.isIdentifier(base) ? base.text : null, called: expression.name.text }
  }
  return { root: null, called: null }
}

/** Top-level registrations of one file: `file:line name` for each. */
export function topLevelRegistrations(file: string, text: string, moduleDir: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  // what the file imports from outside its own module folder, by local name
  const foreign = new Set<string>()
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue
    const from = statement.moduleSpecifier.text
    if (!from.startsWith('.')) continue
    const target = path.resolve(path.dirname(file), from)
    if (target.startsWith(moduleDir + path.sep)) continue
    const clause = statement.importClause
    if (clause?.name) foreign.add(clause.name.text)
    const bindings = clause?.namedBindings
    if (bindings && ts.isNamespaceImport(bindings)) foreign.add(bindings.name.text)
    if (bindings && ts.isNamedImports(bindings)) for (const element of bindings.elements) foreign.add(element.name.text)
  }
  const found: string[] = []
  for (const statement of source.statements) {
    if (!ts.isExpressionStatement(statement)) continue
    let expression = statement.expression
    while (
      ts.isAwaitExpression(expression) ||
      ts.isVoidExpression(expression) ||
      ts.isParenthesizedExpression(expression)
    )
      expression = expression.expression
    if (!ts.isCallExpression(expression)) continue
    const { root: base, called } = calleeNames(expression.expression)
    const isForeign = base !== null && foreign.has(base)
    const looksLikeRegistration = called !== null && REGISTRATION.test(called) && ts.isIdentifier(expression.expression)
    if (isForeign || looksLikeRegistration) {
      const line = source.getLineAndCharacterOfPosition(statement.getStart()).line + 1
      found.push(`${path.relative(root, file)}:${line} ${expression.expression.getText()}`)
    }
  }
  return found
}

test('no module registers with another at import time: top-level calls of foreign functions fail, named by file:line', () => {
  const found: string[] = []
  for (const file of sourceFiles(modulesDir)) {
    const moduleDir = path.join(modulesDir, path.relative(modulesDir, file).split(path.sep)[0]!)
    found.push(...topLevelRegistrations(file, readFileSync(file, 'utf8'), moduleDir))
  }
  assert.deepEqual(found, [], `declare these as the module's reactions (src/platform/module.ts):\n${found.join('\n')}`)
})

test('the check finds a registration: an imported function, a register… or on… call, awaited or not', () => {
  const moduleDir = path.join(modulesDir, 'sample')
  const file = path.join(moduleDir, 'index.ts')
  const text = [
    "import { registerContactCleanup } from '../contacts/index.ts'",
    "import * as events from '../../platform/events/signals.ts'",
    "import { own } from './sample.service.ts'",
    "import { EventEmitter } from 'node:events'",
    'registerContactCleanup(async () => ({}))',
    'events.setSignalListeners([])',
    'onSomething(() => {})',
    'await registerLater()',
    'own()',
    'new EventEmitter().on("x", () => {})',
    'const port = { on() {} }',
    "port.on('message', () => {})",
  ].join('\n')
  assert.deepEqual(topLevelRegistrations(file, text, moduleDir), [
    'src/modules/sample/index.ts:5 registerContactCleanup',
    'src/modules/sample/index.ts:6 events.setSignalListeners',
    'src/modules/sample/index.ts:7 onSomething',
    'src/modules/sample/index.ts:8 registerLater',
  ])
})

test('every module with reactions has its place in the order reactions run (REACTION_ORDER, src/services.ts)', () => {
  const unplaced = mountedModules.filter((m) => m.reactions && !REACTION_ORDER.includes(m.name)).map((m) => m.name)
  assert.deepEqual(unplaced, [])
})

test('docs/architecture.md shows what every module offers and reacts to, as npm run docs:modules generates it', async () => {
  const page = readFileSync(path.join(root, 'docs/architecture.md'), 'utf8')
  const start = page.indexOf(DOC_START)
  const end = page.indexOf(DOC_END)
  assert.ok(start >= 0 && end > start, 'docs/architecture.md has the modules:start and modules:end markers')
  // Biome pads the table's cells; the content must be what the module list generates
  const normal = (text: string) =>
    text
      .trim()
      .split('\n')
      .map((line) => line.replace(/\s+/g, ' ').replace(/-{3,}/g, '---'))
      .join('\n')
  assert.equal(
    normal(page.slice(start + DOC_START.length, end)),
    normal(await moduleTableMarkdown()),
    'the module table is out of date: run npm run docs:modules',
  )
})
