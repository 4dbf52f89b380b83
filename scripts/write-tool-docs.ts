import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { catalogueMarkdown, DOC_END, DOC_START } from '../src/mcp/catalogue-doc.ts'

// Rewrites the tool table of docs/tool-server.md from the catalogue: run `npm run tools-doc` after changing a tool.
const target = new URL('../docs/tool-server.md', import.meta.url)
const page = readFileSync(target, 'utf8')
const start = page.indexOf(DOC_START)
const end = page.indexOf(DOC_END)
if (start < 0 || end < start) throw new Error('docs/tool-server.md lacks the tools:start and tools:end markers')
writeFileSync(target, `${page.slice(0, start + DOC_START.length)}\n${catalogueMarkdown()}\n${page.slice(end)}`)
// Biome aligns the table's columns, as in every other page
execFileSync('npx', ['biome', 'format', '--write', fileURLToPath(target)], { stdio: 'ignore' })
console.log(`wrote ${target.pathname}`)
