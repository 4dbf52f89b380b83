import type { DataCommand } from './command.ts'
import { dataCommands } from './commands.ts'

// The CLI's help as people read help: names and descriptions in two columns, wrapped at 80 columns, a command's
// usage, options and an example on its own --help. Pure functions of the command definitions (help.test.ts).

export const WIDTH = 80

/** A command that is not a data command (serve, restore), described the same way. */
export interface CommandDoc {
  usage: string
  summary: string
  options?: Record<string, { type: 'string' | 'boolean'; description: string }>
  example: string
}

/** Words of `text` in lines of at most `width` (a single longer word keeps its own line). */
export function wrap(text: string, width: number): string[] {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line)
      line = word
    } else line = line ? `${line} ${word}` : word
  }
  if (line) lines.push(line)
  return lines
}

/** Two columns: the left padded to the longest (at most `maxLeft`, a longer one gets a line of its own). */
export function columns(rows: Array<[string, string]>, options: { indent?: number; maxLeft?: number } = {}): string[] {
  const indent = ' '.repeat(options.indent ?? 2)
  const maxLeft = options.maxLeft ?? 26
  const left = Math.min(maxLeft, Math.max(...rows.map(([l]) => l.length)))
  const at = indent.length + left + 2
  const out: string[] = []
  for (const [name, description] of rows) {
    const text = wrap(description, WIDTH - at)
    if (name.length > left) {
      out.push(`${indent}${name}`)
      for (const line of text) out.push(`${' '.repeat(at)}${line}`)
      continue
    }
    out.push(`${indent}${name.padEnd(left)}  ${text[0] ?? ''}`.trimEnd())
    for (const line of text.slice(1)) out.push(`${' '.repeat(at)}${line}`)
  }
  return out
}

/**
 * A usage's arguments as units a line break may not split: a bracketed or parenthesized group, an option with its
 * value (`--account ID`); a unit wider than a line is split into its words.
 */
function usageUnits(usage: string, width: number): string[] {
  const groups: string[] = []
  let depth = 0
  let current = ''
  for (const char of usage) {
    if (char === ' ' && depth === 0) {
      if (current) groups.push(current)
      current = ''
      continue
    }
    if (char === '[' || char === '(') depth++
    if (char === ']' || char === ')') depth = Math.max(0, depth - 1)
    current += char
  }
  if (current) groups.push(current)
  const units: string[] = []
  for (const group of groups) {
    const last = units[units.length - 1]
    if (last?.startsWith('--') && !last.includes(' ') && !/^[-[(]/.test(group))
      units[units.length - 1] = `${last} ${group}`
    else units.push(group)
  }
  return units.flatMap((unit) => (unit.length > width ? wrap(unit, width) : [unit]))
}

/** `Usage: herold NAME USAGE` wrapped at 80, continuation lines indented by four. */
function usageLines(name: string, usage: string): string[] {
  const lines = [`Usage: herold ${name}`]
  for (const unit of usageUnits(usage, WIDTH - 4)) {
    const last = lines[lines.length - 1]
    if (last.length + 1 + unit.length <= WIDTH) lines[lines.length - 1] = `${last} ${unit}`
    else lines.push(`    ${unit}`)
  }
  return lines
}

const sentence = (text: string) => (/[.!?)]$/.test(text) ? text : `${text}.`)

/** A command's --help: usage, what it does, its options, an example. */
export function commandHelp(name: string, command: DataCommand | CommandDoc): string {
  const options: Array<[string, string]> = Object.entries(command.options ?? {}).map(([option, spec]) => [
    `--${option}`,
    spec.description,
  ])
  options.push(['--json', 'print one JSON object and nothing else'], ['--help', 'this text'])
  return [
    ...usageLines(name, command.usage),
    '',
    ...wrap(sentence(command.summary), WIDTH),
    '',
    'Options:',
    ...columns(options),
    '',
    'Example:',
    ...command.example.split('\n').map((line) => `  ${line}`),
  ].join('\n')
}

/** herold --help: every command by name with its summary, then where the rest is. */
export function topLevelHelp(commands: Record<string, DataCommand | CommandDoc>, environment: string[]): string {
  const firstClause = (summary: string) => summary.split(/[:;(]/)[0].trim()
  return [
    'herold: the Herold server and its administration',
    '',
    'Usage: herold <command> [options]',
    '',
    'Commands:',
    ...columns(Object.entries(commands).map(([name, c]) => [name, firstClause(c.summary)])),
    '',
    ...wrap(
      'Every command takes --help (its options and an example) and --json (one JSON object and nothing else).',
      WIDTH,
    ),
    '',
    ...wrap(`Environment: ${environment.join(', ')}. See docs/operations.md.`, WIDTH),
  ].join('\n')
}

/** herold GROUP: the group's commands with their summaries. */
export function groupHelp(group: string, commands: Record<string, DataCommand>): string {
  return [
    `Usage: herold ${group} <command> [options]`,
    '',
    'Commands:',
    ...columns(Object.entries(commands).map(([name, c]) => [name, c.summary])),
    '',
    `Run \`herold ${group} <command> --help\` for its options and an example.`,
  ].join('\n')
}

const ENVIRONMENT = [
  'PORT',
  'HOST',
  'HEROLD_DATA_DIR',
  'DATABASE_URL',
  'REDIS_URL',
  'HEROLD_ROLE',
  'HEROLD_PUBLIC_URL',
  'HEROLD_SECRET_KEY',
  'HEROLD_WORKER_CONCURRENCY',
  'HEROLD_DATABASE_POOL_SIZE',
  'HEROLD_METRICS_TOKEN',
  'HEROLD_METRICS_PORT',
  'HEROLD_TRUST_PROXY',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'LOG_LEVEL',
  'and more',
]

/** The commands that are not data commands, for the help. */
export const processCommands: Record<string, CommandDoc> = {
  serve: {
    usage: '[--role all|api|worker]',
    summary:
      'Run the server: the API and the workers (role all, the default), only the API, or only the workers; the embedded database unless DATABASE_URL is set. With --json one JSON object {url, role, pid} is printed once it listens, the logs go to stderr',
    options: { role: { type: 'string', description: 'all (default), api or worker' } },
    example:
      'HEROLD_DATA_DIR=./data PORT=3000 herold serve\nDATABASE_URL=postgres://herold@db:5432/herold herold serve --role worker',
  },
  restore: {
    usage: 'FILE',
    summary:
      'Restore a backup (the server stopped): the database and secret.key of `herold backup` go into HEROLD_DATA_DIR, which must be empty or missing; start the server afterwards',
    example: 'HEROLD_DATA_DIR=./data herold restore herold-2026-11-26.backup',
  },
}

/** the data commands grouped by their first word, in the order each group first appears */
const groups = [...new Set(Object.keys(dataCommands).map((name) => name.split(' ')[0]))]
const byGroup = Object.entries(dataCommands).sort(
  ([a], [b]) => groups.indexOf(a.split(' ')[0]) - groups.indexOf(b.split(' ')[0]),
)

export const HELP = topLevelHelp({ ...processCommands, ...Object.fromEntries(byGroup) }, ENVIRONMENT)
