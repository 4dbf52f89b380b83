import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'

export const ROOT = path.resolve(import.meta.dirname, '../..')
const NODE = process.execPath
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm'

export function tempDataDir(): string {
  return mkdtempSync(path.join(tmpdir(), 'herold-test-'))
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address ? address.port : 0
      server.close(() => resolve(port))
    })
    server.on('error', reject)
  })
}

/**
 * Environment for a child: no inherited Herold settings, so the test says exactly what the process gets. `extra` is
 * what it gets, HEROLD_* settings included (`HEROLD_EMBEDDED_THREAD: '1'`); an undefined value leaves a variable out.
 */
export function childEnv(extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(HEROLD_|DATABASE_URL|REDIS_URL|PORT|HOST$)/.test(key)) env[key] = value
  }
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) env[key] = value
  return env
}

export interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs `herold …` the way a user would (bin/herold.mjs), to completion; `input` is its standard input. */
export function runCli(args: string[], env: NodeJS.ProcessEnv, input = ''): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, [path.join(ROOT, 'bin/herold.mjs'), ...args], { cwd: ROOT, env })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => {
      stdout += chunk
    })
    child.stderr.on('data', (chunk) => {
      stderr += chunk
    })
    child.on('error', reject)
    child.stdin.end(input)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

export interface ServerProcess {
  child: ChildProcess
  url: string
  output(): string
  /** SIGTERM, then wait for the exit code */
  stop(): Promise<number | null>
}

export interface StartOptions {
  /**
   * The process writes its stdout and stderr to this file, as an operator's `npm start > herold.log` does, instead
   * of into a pipe this process reads (benchmarks: the load generator must not also be the log's reader).
   */
  logFile?: string
}

function stopper(child: ChildProcess) {
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)))
  return async () => {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid!, 'SIGTERM')
      } catch {}
    }
    return exited
  }
}

function startLoggingToFile(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: (output: string) => string | null,
  timeoutMs: number,
  logFile: string,
): Promise<ServerProcess> {
  const fd = openSync(logFile, 'a')
  const child = spawn(command, args, { cwd: ROOT, env, detached: true, stdio: ['ignore', fd, fd] })
  closeSync(fd)
  const stop = stopper(child)
  const output = () => readFileSync(logFile, 'utf8')
  return new Promise((resolve, reject) => {
    const started = Date.now()
    const look = () => {
      const url = ready(output())
      if (url) return resolve({ child, url, output, stop })
      if (child.exitCode !== null) return reject(new Error(`process exited with ${child.exitCode}:\n${output()}`))
      if (Date.now() - started > timeoutMs) {
        void stop()
        return reject(new Error(`process did not become ready in ${timeoutMs} ms:\n${output()}`))
      }
      setTimeout(look, 100)
    }
    look()
  })
}

/** Starts a long-running command and waits until `ready(output)` returns a base URL. */
export function startProcess(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: (output: string) => string | null,
  timeoutMs = 180_000,
  options: StartOptions = {},
): Promise<ServerProcess> {
  if (options.logFile) return startLoggingToFile(command, args, env, ready, timeoutMs, options.logFile)
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env, detached: true })
    let output = ''
    let settled = false
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)))
    const stop = async () => {
      if (child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-child.pid!, 'SIGTERM')
        } catch {}
      }
      return exited
    }
    const timer = setTimeout(() => {
      if (settled) return
      settled = true
      void stop()
      reject(new Error(`process did not become ready in ${timeoutMs} ms:\n${output}`))
    }, timeoutMs)
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const url = settled ? null : ready(output)
      if (url) {
        settled = true
        clearTimeout(timer)
        resolve({ child, url, output: () => output, stop })
      }
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.on('exit', (code) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      reject(new Error(`process exited with ${code} before it was ready:\n${output}`))
    })
  })
}

export const listeningAt = (output: string): string | null => {
  const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
  return match ? match[1] : null
}

/** The server as an operator starts it, `npm start` in the checkout, ready once it listens. */
export function npmStart(
  env: NodeJS.ProcessEnv,
  timeoutMs = 180_000,
  options: StartOptions = {},
): Promise<ServerProcess> {
  return startProcess(NPM, ['start'], env, listeningAt, timeoutMs, options)
}

/** The one-time setup link `npm start` prints on a fresh data directory; fails the test when there is none. */
export function setupLinkOf(server: ServerProcess): string {
  const link = /(http:\/\/127\.0\.0\.1:\d+\/setup\/[A-Za-z0-9_-]{43})/.exec(server.output())
  assert.ok(link, `npm start prints the setup link:\n${server.output()}`)
  return link[1]
}
