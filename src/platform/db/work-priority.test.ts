import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { openDatabase } from './client.ts'
import { asBulkWork, BULK_RUN_MS, INTERACTIVE_STREAK, isBulkWork, PriorityGate } from './work-priority.ts'

/** A statement that holds the gate until released by the test. */
function held(gate: PriorityGate, order: string[], name: string) {
  let release!: () => void
  const done = gate.run(async () => {
    order.push(name)
    await new Promise<void>((resolve) => (release = resolve))
  })
  return { done, release: () => release() }
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('PriorityGate', () => {
  test('a waiting interactive statement goes before every waiting bulk one', async () => {
    const gate = new PriorityGate()
    const order: string[] = []
    const first = held(gate, order, 'bulk 1')
    const waiting: Array<Promise<void>> = []
    await asBulkWork(async () => {
      for (let i = 2; i <= 4; i++) waiting.push(gate.run(async () => void order.push(`bulk ${i}`)))
    })
    waiting.push(gate.run(async () => void order.push('interactive')))
    assert.deepEqual(gate.waiting, { interactive: 1, bulk: 3 })
    first.release()
    await Promise.all([first.done, ...waiting])
    assert.deepEqual(order, ['bulk 1', 'interactive', 'bulk 2', 'bulk 3', 'bulk 4'])
  })

  test('bulk statements give the event loop a turn every BULK_RUN_MS: a timer or a request is not held until they all ran', async () => {
    const gate = new PriorityGate()
    const order: string[] = []
    const first = await asBulkWork(async () => held(gate, order, 'bulk 1'))
    // statements that keep the thread busy for 6 ms each, as the embedded database's do: a turn every BULK_RUN_MS
    const busy = (name: string) => async () => {
      const until = performance.now() + BULK_RUN_MS * 0.6
      while (performance.now() < until);
      order.push(name)
    }
    const waiting: Array<Promise<void>> = []
    await asBulkWork(async () => {
      for (let i = 2; i <= 6; i++) waiting.push(gate.run(busy(`bulk ${i}`)))
    })
    const timer = new Promise<void>((resolve) => setTimeout(() => resolve(void order.push('timer')), 1))
    first.release()
    await Promise.all([first.done, ...waiting, timer])
    // the timer (due a millisecond after bulk 1 finished) fires between the queued statements, not after all of them
    assert.ok(order.indexOf('timer') < order.indexOf('bulk 6'), order.join(', '))
  })

  test("a request's next statement, asked for as its last one returns, goes before a bulk one waiting all along", async () => {
    const gate = new PriorityGate()
    const order: string[] = []
    const first = held(gate, order, 'interactive 1')
    const waiting: Array<Promise<void>> = []
    await asBulkWork(async () => {
      waiting.push(gate.run(async () => void order.push('bulk')))
    })
    // a request's two statements in a row: the second asked for when the first's promise resolves
    const request = first.done.then(() => gate.run(async () => void order.push('interactive 2')))
    first.release()
    await Promise.all([request, ...waiting])
    assert.deepEqual(order, ['interactive 1', 'interactive 2', 'bulk'])
  })

  test('after an interactive statement with no other asking, the waiting bulk one goes (within a turn)', async () => {
    const gate = new PriorityGate()
    const order: string[] = []
    const first = held(gate, order, 'interactive')
    const waiting = asBulkWork(() => gate.run(async () => void order.push('bulk')))
    await tick()
    first.release()
    await first.done
    await tick()
    await waiting
    assert.deepEqual(order, ['interactive', 'bulk'])
    assert.deepEqual(gate.waiting, { interactive: 0, bulk: 0 })
  })

  test('with a capacity of two, two hold the gate at once and waiters still go interactive first', async () => {
    const gate = new PriorityGate(2)
    const order: string[] = []
    const first = held(gate, order, 'bulk 1')
    const second = held(gate, order, 'bulk 2')
    await tick()
    assert.deepEqual(order, ['bulk 1', 'bulk 2'])
    const waiting: Array<Promise<void>> = []
    await asBulkWork(async () => {
      waiting.push(gate.run(async () => void order.push('bulk 3')))
    })
    waiting.push(gate.run(async () => void order.push('interactive')))
    await tick()
    assert.deepEqual(gate.waiting, { interactive: 1, bulk: 1 })
    first.release()
    await first.done
    await tick()
    // the freed turn went to the interactive statement, the bulk one waits for the next (held one turn after it)
    await tick()
    assert.deepEqual(order, ['bulk 1', 'bulk 2', 'interactive', 'bulk 3'])
    second.release()
    await Promise.all([second.done, ...waiting])
    assert.deepEqual(gate.waiting, { interactive: 0, bulk: 0 })
    // all turns given back: two new holders enter at once
    const again = [held(gate, order, 'a'), held(gate, order, 'b')]
    await tick()
    assert.deepEqual(order.slice(-2), ['a', 'b'])
    for (const h of again) h.release()
    await Promise.all(again.map((h) => h.done))
    assert.throws(() => new PriorityGate(0), /capacity/)
  })

  test('a stream of interactive work lets a waiting bulk statement through after a streak', async () => {
    const gate = new PriorityGate()
    const order: string[] = []
    const first = held(gate, order, 'interactive 0')
    await tick()
    const all: Array<Promise<void>> = [asBulkWork(() => gate.run(async () => void order.push('bulk')))]
    for (let i = 1; i <= INTERACTIVE_STREAK + 2; i++) {
      all.push(gate.run(async () => void order.push(`interactive ${i}`)))
    }
    first.release()
    await Promise.all([first.done, ...all])
    assert.equal(order.indexOf('bulk'), INTERACTIVE_STREAK + 1, order.join(', '))
    assert.equal(order.length, INTERACTIVE_STREAK + 4)
  })

  test('the bulk mark follows the async work it was given, not what runs beside it', async () => {
    assert.equal(isBulkWork(), false)
    const seen: boolean[] = []
    await Promise.all([
      asBulkWork(async () => {
        await tick()
        seen.push(isBulkWork())
      }),
      (async () => {
        await tick()
        seen.push(isBulkWork())
      })(),
    ])
    assert.deepEqual(seen.sort(), [false, true])
    assert.equal(isBulkWork(), false)
  })

  test('an error of a statement frees the gate for the next', async () => {
    const gate = new PriorityGate()
    await assert.rejects(
      gate.run(async () => Promise.reject(new Error('boom'))),
      /boom/,
    )
    assert.equal(await gate.run(async () => 'next'), 'next')
    assert.deepEqual(gate.waiting, { interactive: 0, bulk: 0 })
  })
})

describe('the embedded database behind the gate', () => {
  test("a request's statement overtakes a newsletter's queued statements", async (t) => {
    const database = await openDatabase({ dataDir: 'memory://' })
    t.after(() => database.close())
    const order: string[] = []
    // a bulk transaction holds the connection while twenty bulk statements and one request's statement queue up
    let release!: () => void
    const holding = asBulkWork(() =>
      database.orm.transaction(async () => {
        order.push('bulk transaction')
        await new Promise<void>((resolve) => (release = resolve))
      }),
    )
    await tick()
    const bulk = asBulkWork(() =>
      Promise.all(
        Array.from({ length: 20 }, (_, i) => database.query('SELECT $1::int AS n', [i]).then(() => order.push('bulk'))),
      ),
    )
    const request = database.query('SELECT 1').then(() => order.push('request'))
    await tick()
    release()
    await Promise.all([holding, bulk, request])
    assert.equal(order[0], 'bulk transaction')
    assert.equal(order[1], 'request', order.join(', '))
    assert.equal(order.filter((o) => o === 'bulk').length, 20)
  })
})
