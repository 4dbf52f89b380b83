import { randomBytes } from 'node:crypto'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'

/** Written by the server that holds an embedded data directory; the CLI sends its commands there. */
export interface ServerFile {
  pid: number
  /** null while the server is still starting */
  url: string | null
  token: string
}

const FILE = 'server.json'

export function readServerFile(dataDir: string): ServerFile | null {
  try {
    const parsed = JSON.parse(readFileSync(path.join(dataDir, FILE), 'utf8')) as ServerFile
    return isAlive(parsed.pid) ? parsed : null
  } catch {
    return null
  }
}

export function writeServerFile(
  dataDir: string,
  url: string | null,
  token = randomBytes(32).toString('base64url'),
): ServerFile {
  const file = { pid: process.pid, url, token }
  writeFileSync(path.join(dataDir, FILE), JSON.stringify(file), { mode: 0o600 })
  return file
}

export function removeServerFile(dataDir: string): void {
  const current = readServerFile(dataDir)
  if (current && current.pid !== process.pid) return
  rmSync(path.join(dataDir, FILE), { force: true })
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
