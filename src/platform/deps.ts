import type { Config } from '../config.ts'
import type { Clock } from './clock.ts'
import type { Database } from './db/client.ts'
import type { RateLimiter } from './rate-limit/rate-limiter.ts'

/** What the platform hands every module. */
export interface PlatformDeps {
  config: Config
  database: Database
  clock: Clock
  /** the process's rate limiter (absent in workers and scripts) */
  rateLimiter?: RateLimiter
}
