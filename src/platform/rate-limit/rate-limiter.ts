import { Redis } from 'ioredis'
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible'

export interface RateDecision {
  allowed: boolean
  limit: number
  remaining: number
  /** seconds until the window frees a request */
  resetSeconds: number
}

/** Counts requests per credential in a fixed window; one instance per process, shared state in Redis. */
export interface RateLimiter {
  consume(key: string): Promise<RateDecision>
  close(): Promise<void>
}

export const REQUESTS_PER_MINUTE = 120

function decision(res: RateLimiterRes, allowed: boolean, limit: number): RateDecision {
  return {
    allowed,
    limit,
    remaining: Math.max(0, res.remainingPoints),
    resetSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
  }
}

function wrap(limiter: RateLimiterMemory | RateLimiterRedis, limit: number, onClose: () => Promise<void>): RateLimiter {
  return {
    async consume(key) {
      try {
        return decision(await limiter.consume(key), true, limit)
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) return decision(rejection, false, limit)
        throw rejection
      }
    },
    close: onClose,
  }
}

export function memoryRateLimiter(points = REQUESTS_PER_MINUTE, durationSeconds = 60): RateLimiter {
  return wrap(new RateLimiterMemory({ points, duration: durationSeconds }), points, async () => {})
}

/** Shared across API processes; if Redis fails, each process falls back to counting in memory. */
export function redisRateLimiter(url: string, points = REQUESTS_PER_MINUTE, durationSeconds = 60): RateLimiter {
  const redis = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: false })
  redis.on('error', () => {})
  const limiter = new RateLimiterRedis({
    storeClient: redis,
    keyPrefix: 'herold:rl',
    points,
    duration: durationSeconds,
    insuranceLimiter: new RateLimiterMemory({ points, duration: durationSeconds }),
  })
  return wrap(limiter, points, async () => {
    redis.disconnect()
  })
}
