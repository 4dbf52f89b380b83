import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { freePort } from '../test/helpers/process.ts'
import { loadConfig } from './config.ts'
import { serve } from './main.ts'

test('a first start shows its key once the server answers: the curl printed beside it works at that moment', async () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'herold-first-start-'))
  const port = await freePort()
  const config = loadConfig({}, { dataDir, port, publicUrl: `http://127.0.0.1:${port}` })
  const lines: string[] = []
  // what a person does on reading the key: calls the server with it, right away
  let tried: Promise<number | string> | null = null
  const print = (line: string) => {
    lines.push(line)
    const key = /HEROLD_API_KEY=(hk_[A-Za-z0-9_-]+)/.exec(line)?.[1]
    if (!key) return
    tried = fetch(`http://127.0.0.1:${port}/v1/me`, { headers: { authorization: `Bearer ${key}` } }).then(
      (response) => response.status,
      (error: Error & { cause?: { code?: string } }) => error.cause?.code ?? error.message,
    )
  }
  const server = await serve({ ...config, logLevel: 'silent' }, print, { logsToStderr: true })
  try {
    assert.ok(tried, `a key is printed:\n${lines.join('\n')}`)
    assert.equal(await tried, 200)
  } finally {
    await server.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
})
