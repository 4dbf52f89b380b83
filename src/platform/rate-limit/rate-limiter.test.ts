import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { test } from 'node:test'
import { memoryRateLimiter, type RateLimiter, redisRateLimiter } from './rate-limiter.ts'

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

/** Waits until A and B count in Redis (each connects on its own; until then a process counts in memory). */
async function sharing(a: RateLimiter, b: RateLimiter): Promise<void> {
  const key = `connected:${randomUUID()}`
  for (let tries = 0; tries < 100; tries++) {
    const first = await a.consume(key, 10_000)
    const second = await b.consume(key, 10_000)
    if (first.remaining - second.remaining === 1) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error('the two limiters never counted together in Redis')
}

test('on Redis: processes of one namespace count together, another namespace counts apart', async () => {
  // the Redis of this machine and CI (HEROLD_TEST_REDIS_URL in CI's second phase); fresh namespaces per run
  const url = process.env.HEROLD_TEST_REDIS_URL || 'redis://127.0.0.1:6379'
  const [ours, theirs] = [`herold-test:${randomUUID()}:rl`, `herold-test:${randomUUID()}:rl`]
  const one = redisRateLimiter(url, 2, 60, ours)
  const two = redisRateLimiter(url, 2, 60, ours)
  const apart = redisRateLimiter(url, 2, 60, theirs)
  const apartToo = redisRateLimiter(url, 2, 60, theirs)
  try {
    await sharing(one, two)
    await sharing(apart, apartToo)
    assert.equal((await one.consume('signin-ip:127.0.0.1')).allowed, true)
    assert.equal((await two.consume('signin-ip:127.0.0.1')).allowed, true)
    // a third attempt through either process of the namespace is over the limit: the count is in Redis
    assert.equal((await one.consume('signin-ip:127.0.0.1')).allowed, false, 'the other process’s attempt not counted')
    // another installation (or test file) on the same Redis starts from nothing
    const elsewhere = await apart.consume('signin-ip:127.0.0.1')
    assert.deepEqual([elsewhere.allowed, elsewhere.remaining], [true, 1])
  } finally {
    await Promise.all([one, two, apart, apartToo].map((limiter) => limiter.close()))
  }
})
