import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { groupCommit } from './group-commit.ts'

function deferred() {
  let resolve!: () => void
  const promise = new Promise<void>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

describe('group commit', () => {
  test('items submitted in the same tick are written together, each answered in order', async () => {
    const batches: number[][] = []
    const write = groupCommit(async (items: number[]) => {
      batches.push(items)
      return items.map((n) => n * 10)
    })
    const results = await Promise.all([write(1), write(2), write(3)])
    assert.deepEqual(results, [10, 20, 30])
    assert.deepEqual(batches, [[1, 2, 3]])
  })

  test('items submitted while a batch is written wait for the next batch, which takes them all', async () => {
    const batches: number[][] = []
    const gate = deferred()
    const write = groupCommit(async (items: number[]) => {
      batches.push(items)
      if (batches.length === 1) await gate.promise
      return items
    })
    const first = write(1)
    await new Promise((r) => setImmediate(r))
    const later = [write(2), write(3), write(4)]
    gate.resolve()
    assert.deepEqual(await Promise.all([first, ...later]), [1, 2, 3, 4])
    assert.deepEqual(batches, [[1], [2, 3, 4]])
  })

  test('a batch is at most maxBatch items', async () => {
    const batches: number[][] = []
    const write = groupCommit(
      async (items: number[]) => {
        batches.push(items)
        return items
      },
      { maxBatch: 2 },
    )
    await Promise.all([1, 2, 3, 4, 5].map(write))
    assert.deepEqual(batches, [[1, 2], [3, 4], [5]])
  })

  test('a failed batch rejects its own items only', async () => {
    const write = groupCommit(
      async (items: number[]) => {
        if (items.includes(2)) throw new Error('bad batch')
        return items
      },
      { maxBatch: 2 },
    )
    const results = await Promise.allSettled([write(1), write(2), write(3)])
    assert.deepEqual(
      results.map((r) => r.status),
      ['rejected', 'rejected', 'fulfilled'],
    )
  })
})
