import path from 'node:path'
import { parseArgs } from 'node:util'
import { ConfigError, loadConfig, type Role } from '../config.ts'
import { serve } from '../main.ts'
import { restoreBackup } from '../platform/db/backup.ts'
import { openDatabase } from '../platform/db/client.ts'
import { migrate } from '../platform/db/migrate.ts'
import { readServerFile } from '../platform/embedded-lock.ts'
import { adminEndpoint } from './admin-endpoint.ts'
import { AdminError, type DataCommand, dataCommands, parseCommandArgs } from './commands.ts'
import { commandHelp, groupHelp, HELP, processCommands } from './help.ts'

class UsageError extends Error {}

/** herold restore FILE: a backup of `herold backup` into an empty data directory; no server may hold it. */
async function runRestore(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { help: { type: 'boolean' }, json: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  })
  if (values.help) {
    console.log(commandHelp('restore', processCommands.restore))
    return
  }
  const file = positionals[0]
  if (!file) throw new UsageError('FILE is required: herold restore FILE')
  const config = loadConfig()
  if (config.databaseUrl) throw new UsageError('restore is for the embedded database; with DATABASE_URL use pg_restore')
  if (readServerFile(config.dataDir)) throw new UsageError(`a server holds ${config.dataDir}; stop it first`)
  let manifest: Awaited<ReturnType<typeof restoreBackup>>
  try {
    manifest = await restoreBackup({ file: path.resolve(file), dataDir: config.dataDir })
  } catch (error) {
    throw new AdminError((error as Error).message)
  }
  const result = { data_dir: config.dataDir, ...manifest }
  console.log(
    values.json
      ? JSON.stringify(result)
      : `restored the backup of ${manifest.created_at} into ${config.dataDir}${manifest.secret_key_included ? ' (with secret.key)' : '; set HEROLD_SECRET_KEY to the key of the backed-up server'}`,
  )
}

async function runServe(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { role: { type: 'string' }, help: { type: 'boolean' }, json: { type: 'boolean' } },
    strict: true,
  })
  if (values.help) {
    console.log(commandHelp('serve', processCommands.serve))
    return
  }
  const role = values.role as Role | undefined
  if (role !== undefined && !['all', 'api', 'worker'].includes(role))
    throw new UsageError('--role must be all, api or worker')
  const config = loadConfig(process.env, role ? { role } : {})
  const server = await serve(config, values.json ? (line) => console.error(line) : console.log, {
    logsToStderr: values.json === true,
    adminEndpoint,
  })
  if (values.json) console.log(JSON.stringify({ url: server.url, role: config.role, pid: process.pid }))
  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    await server.stop()
    process.exit(0)
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
}

async function runDataCommand(name: string, command: DataCommand, argv: string[]): Promise<void> {
  const { values, positionals } = parseCommandArgs(command, argv)
  if (values.help) {
    console.log(commandHelp(name, command))
    return
  }
  command.prepare?.(values, positionals)
  const config = loadConfig()
  const result = config.databaseUrl
    ? await runLocally(config, command, values, positionals)
    : await runEmbedded(config, name, command, values, positionals)
  console.log(values.json ? JSON.stringify(result) : command.human(result))
}

async function runLocally(
  config: ReturnType<typeof loadConfig>,
  command: DataCommand,
  values: Record<string, string | boolean | undefined>,
  positionals: string[],
) {
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 })
  try {
    if (command !== dataCommands.migrate) await migrate(database)
    const bar = progressBar()
    try {
      return await command.run(database, values, positionals, { progress: bar.update, config })
    } finally {
      bar.end()
    }
  } finally {
    await database.close()
  }
}

/** A running server holds the embedded database: send it the command; otherwise open the directory ourselves. */
async function runEmbedded(
  config: ReturnType<typeof loadConfig>,
  name: string,
  command: DataCommand,
  values: Record<string, string | boolean | undefined>,
  positionals: string[],
) {
  const server = readServerFile(config.dataDir)
  if (!server) return runLocally(config, command, values, positionals)
  if (!server.url)
    throw new AdminError(`the server (pid ${server.pid}) holding ${config.dataDir} is still starting; try again`)
  const response = await fetch(`${server.url}/_admin/command`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-herold-admin-token': server.token },
    body: JSON.stringify({ command: name, values: stripUndefined(values), positionals }),
  })
  const body = (await response.json()) as { result?: Record<string, unknown>; error?: { message: string } }
  if (!response.ok || !body.result) throw new AdminError(body.error?.message ?? `server answered ${response.status}`)
  return body.result
}

/** A progress bar on stderr (redrawn in place on a terminal, a line every few seconds otherwise). */
function progressBar() {
  const tty = process.stderr.isTTY === true
  let last = 0
  let drawn = false
  return {
    update(done: number, total: number, detail: string) {
      const now = Date.now()
      if (now - last < (tty ? 100 : 3000)) return
      last = now
      const share = total > 0 ? Math.min(1, done / total) : 0
      const width = 30
      const filled = Math.round(share * width)
      const text = `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${String(Math.round(share * 100)).padStart(3)}%  ${detail}`
      process.stderr.write(tty ? `\r${text}` : `${text}\n`)
      drawn = true
    },
    end() {
      if (drawn && tty) process.stderr.write('\n')
    },
  }
}

function stripUndefined(values: Record<string, string | boolean | undefined>): Record<string, string | boolean> {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as Record<
    string,
    string | boolean
  >
}

export async function main(argv: string[]): Promise<number> {
  const json = argv.includes('--json')
  try {
    const [first, second] = argv
    if (!first || first === '--help' || first === 'help' || first === '-h') {
      console.log(HELP)
      return first ? 0 : 1
    }
    if (first === 'serve') {
      await runServe(argv.slice(1))
      return -1
    }
    if (first === 'restore') {
      await runRestore(argv.slice(1))
      return 0
    }
    const twoWords = `${first} ${second ?? ''}`
    if (dataCommands[twoWords]) {
      await runDataCommand(twoWords, dataCommands[twoWords], argv.slice(2))
      return 0
    }
    if (dataCommands[first]) {
      await runDataCommand(first, dataCommands[first], argv.slice(1))
      return 0
    }
    const group = Object.keys(dataCommands).filter((n) => n.startsWith(`${first} `))
    if (group.length > 0 && (second === undefined || second === '--help')) {
      console.log(groupHelp(first, Object.fromEntries(group.map((n) => [n, dataCommands[n]]))))
      return second === '--help' ? 0 : 1
    }
    throw new UsageError(`unknown command "${argv.join(' ')}"; see herold --help`)
  } catch (error) {
    const known = error instanceof AdminError || error instanceof UsageError || error instanceof ConfigError
    const message = known ? (error as Error).message : `unexpected failure: ${(error as Error).message}`
    if (json) console.log(JSON.stringify({ error: { message } }))
    else console.error(`herold: ${message}`)
    return known ? 2 : 1
  }
}

const code = await main(process.argv.slice(2))
if (code >= 0) process.exitCode = code
