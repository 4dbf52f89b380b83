import type { PlatformDeps } from '../module.ts'
import { deleteExpiredIdempotencyKeys } from './idempotency.ts'

const EVERY_MS = 10 * 60 * 1000

/** Removes idempotency records past their 24-hour window, so the table stays small. */
export function idempotencySweeper(deps: PlatformDeps) {
  return async () => {
    const sweep = () => deleteExpiredIdempotencyKeys(deps.database.orm, deps.clock).catch(() => 0)
    await sweep()
    const timer = setInterval(sweep, EVERY_MS)
    timer.unref()
    return async () => clearInterval(timer)
  }
}
