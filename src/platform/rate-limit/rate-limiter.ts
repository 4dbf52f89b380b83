import { createRequire } from 'node:module'
import type { Redis as RedisClient } from 'ioredis'
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible'

export interface RateDecision {
  allowed: boolean
  limit: number
  remaining: number
  /** seconds until the window frees a request */
  resetSeconds: number
}

/**
 * Counts requests per credential in a fixed window; one instance per process, shared state in Redis. `limit` is the
 * credential's plan's requests per minute (default: the limiter's own).
 */
export interface RateLimiter {
  consume(key: string, limit?: number): Promise<RateDecision>
  /** the same, synchronously, where the count is in this process's memory (absent where it is not) */
  consumeNow?(key: string, limit?: number): RateDecision
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

/** One counter per distinct limit (plans differ), created on first use, all sharing the key space. */
function perLimit(
  make: (points: number) => RateLimiterMemory | RateLimiterRedis,
  defaultPoints: number,
  onClose: () => Promise<void>,
): RateLimiter {
  const limiters = new Map<number, RateLimiterMemory | RateLimiterRedis>()
  return {
    async consume(key, limit = defaultPoints) {
      let limiter = limiters.get(limit)
      if (!limiter) {
        limiter = make(limit)
        limiters.set(limit, limiter)
      }
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

/**
 * Counts in this process's memory, synchronously: a fixed window per key that starts at the key's first request
 * (as rate-limiter-flexible's memory limiter counts, which the Redis limiter falls back to). Its promise-only API
 * cost the credential check a chain of promises on every request; this one lets a request whose key is in the
 * credential cache pass the check without any.
 */
export function memoryRateLimiter(
  points = REQUESTS_PER_MINUTE,
  durationSeconds = 60,
  now: () => number = Date.now,
): RateLimiter & { consumeNow(key: string, limit?: number): RateDecision } {
  const durationMs = durationSeconds * 1000
  const windows = new Map<string, { count: number; endsAt: number }>()
  let sweepAt = now() + durationMs
  const consumeNow = (key: string, limit = points): RateDecision => {
    const at = now()
    if (at >= sweepAt) {
      // windows that ended are dropped once a window's time, not kept for keys never seen again
      for (const [k, w] of windows) if (w.endsAt <= at) windows.delete(k)
      sweepAt = at + durationMs
    }
    // the limit is part of the key, as the Redis limiter's: a plan change starts a fresh window
    const id = `${limit}:${key}`
    let window = windows.get(id)
    if (window === undefined || window.endsAt <= at) {
      window = { count: 0, endsAt: at + durationMs }
      windows.set(id, window)
    }
    window.count++
    return {
      allowed: window.count <= limit,
      limit,
      remaining: Math.max(0, limit - window.count),
      resetSeconds: Math.max(1, Math.ceil((window.endsAt - at) / 1000)),
    }
  }
  return {
    consumeNow,
    consume: async (key, limit) => consumeNow(key, limit),
    close: async () => {},
  }
}

/**
 * Shared across API processes; if Redis fails, each process falls back to counting in memory. Counters are kept under
 * `namespace` (`herold:rl` in every process of an installation); test processes sharing one Redis each pass their own,
 * or their sign-ins from 127.0.0.1 would count against one another.
 */
export function redisRateLimiter(
  url: string,
  points = REQUESTS_PER_MINUTE,
  durationSeconds = 60,
  namespace = 'herold:rl',
): RateLimiter {
  // ioredis (about 450 KB of modules) loads only where Redis is configured, not in every embedded server
  const { Redis } = createRequire(import.meta.url)('ioredis') as { Redis: typeof RedisClient }
  const redis = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: false })
  redis.on('error', () => {})
  return perLimit(
    (p) =>
      new RateLimiterRedis({
        storeClient: redis,
        // the limit is part of the key: a plan change starts a fresh window instead of misreading the old count
        keyPrefix: `${namespace}:${p}`,
        points: p,
        duration: durationSeconds,
        insuranceLimiter: new RateLimiterMemory({ points: p, duration: durationSeconds }),
      }),
    points,
    async () => {
      redis.disconnect()
    },
  )
}
