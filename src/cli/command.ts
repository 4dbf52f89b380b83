import type { Config } from '../config.ts'
import { AdminError } from '../platform/auth/accounts.service.ts'
import type { Database } from '../platform/db/client.ts'
import { AppError } from '../platform/http/errors.ts'

// The shape of a data command, apart from the commands (commands.ts, users.commands.ts), which both use it.

export type Values = Record<string, string | boolean | undefined>
export type Result = Record<string, unknown>

/** A command that works on the database; the same definition runs in the CLI and behind the admin endpoint. */
export interface DataCommand {
  usage: string
  summary: string
  /** one or more command lines showing a typical call (its --help prints them) */
  example: string
  options?: Record<string, { type: 'string' | 'boolean'; description: string }>
  positionals?: string[]
  /** runs in the CLI before the command is run here or sent to the server (for example: resolve file paths) */
  prepare?(values: Values, positionals: string[]): void
  run(database: Database, values: Values, positionals: string[], io?: CommandIO): Promise<Result>
  human(result: Result): string
}

/** What a command may report while it runs; only in-process (the admin endpoint answers once, at the end). */
export interface CommandIO {
  progress?(done: number, total: number, detail: string): void
  /** the configuration of the process running the command (secret key, data directory, public URL) */
  config?: Config
}

/** Runs a service call, turning its API errors into the CLI's error. */
export async function asCommand<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call()
  } catch (error) {
    if (error instanceof AppError) throw new AdminError(error.message)
    throw error
  }
}
