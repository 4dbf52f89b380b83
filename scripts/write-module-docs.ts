import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { DOC_END, DOC_START, moduleTableMarkdown } from './module-table.ts'

// Rewrites the module table of docs/architecture.md from the module list: run `npm run docs:modules` after changing
// what a module offers or reacts to.
const target = new URL('../docs/architecture.md', import.meta.url)
const page = readFileSync(target, 'utf8')
const start = page.indexOf(DOC_START)
const end = page.indexOf(DOC_END)
if (start < 0 || end < start) throw new Error('docs/architecture.md lacks the modules:start and modules:end markers')
writeFileSync(target, `${page.slice(0, start + DOC_START.length)}\n${await moduleTableMarkdown()}\n${page.slice(end)}`)
// Biome aligns the table's columns, as in every other page
execFileSync('npx', ['biome', 'format', '--write', fileURLToPath(target)], { stdio: 'ignore' })
console.log(`wrote ${target.pathname}`)
