#!/usr/bin/env node
// Runs the TypeScript CLI on the Node 24 the project installs (the machine's own Node may be older).
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const entry = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url))
const [major, minor] = process.versions.node.split('.').map(Number)
if (major > 22 || (major === 22 && minor >= 18)) {
  await import(entry)
} else {
  let node
  try {
    node = createRequire(import.meta.url).resolve('node/bin/node')
  } catch {
    node = fileURLToPath(new URL('../node_modules/node/bin/node', import.meta.url))
  }
  if (!existsSync(node)) {
    console.error('herold needs Node.js >= 22.18; run `npm install` in the project first')
    process.exit(1)
  }
  const child = spawn(node, [entry, ...process.argv.slice(2)], { stdio: 'inherit' })
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal))
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)))
}
