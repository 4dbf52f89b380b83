import assert from 'node:assert/strict'
import { test } from 'node:test'
import { memoryRateLimiter } from './rate-limiter.ts'

test('in memory: a fixed window per key from its first request, the limit per call, a fresh window after it', () => {
  let now = 1_000_000
  const limiter = memoryRateLimiter(3, 60, () => now)
  const first = limiter.consumeNow('a')
  assert.deepEqual(first, { allowed: true, limit: 3, remaining: 2, resetSeconds: 60 })
  now += 10_500
  assert.deepEqual(limiter.consumeNow('a'), { allowed: true, limit: 3, remaining: 1, resetSeconds: 50 })
  assert.deepEqual(limiter.consumeNow('a'), { allowed: true, limit: 3, remaining: 0, resetSeconds: 50 })
  assert.deepEqual(limiter.consumeNow('a'), { allowed: false, limit: 3, remaining: 0, resetSeconds: 50 })
  // another key counts on its own
  assert.equal(limiter.consumeNow('b').remaining, 2)
  // another limit for the same key (its plan changed) starts a fresh window
  assert.deepEqual(limiter.consumeNow('a', 10), { allowed: true, limit: 10, remaining: 9, resetSeconds: 60 })
  // the window ends 60 s after its first request
  now += 49_400
  assert.equal(limiter.consumeNow('a').allowed, false)
  now += 100
  assert.deepEqual(limiter.consumeNow('a'), { allowed: true, limit: 3, remaining: 2, resetSeconds: 60 })
})

test('in memory: consume answers as consumeNow does', async () => {
  const limiter = memoryRateLimiter(1, 60)
  assert.equal((await limiter.consume('k')).allowed, true)
  assert.equal((await limiter.consume('k')).allowed, false)
  assert.equal(limiter.consumeNow('k').allowed, false)
})
