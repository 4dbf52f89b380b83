import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { closeSync, constants, mkdtempSync, openSync, readFileSync, readSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { batchedLogDestination } from './log-destination.ts'

const dir = mkdtempSync(path.join(tmpdir(), 'herold-log-'))
const lines = (count: number, width = 100) =>
  Array.from({ length: count }, (_, i) => `${`{"line":${i}`.padEnd(width - 2, ' ')}}\n`)

test('the lines of one turn are written together after it, in order; a quiet line goes out at once', async () => {
  const file = path.join(dir, 'file.log')
  const fd = openSync(file, 'w')
  try {
    const destination = batchedLogDestination(fd)
    const written = lines(500)
    for (const line of written) destination.write(line)
    assert.equal(readFileSync(file, 'utf8'), '', 'nothing is written within the turn')
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(readFileSync(file, 'utf8'), written.join(''))
    destination.write('{"quiet":true}\n')
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(readFileSync(file, 'utf8'), `${written.join('')}{"quiet":true}\n`)
    destination.write('{"at":"exit"}\n')
    destination.flushSync()
    assert.match(readFileSync(file, 'utf8'), /\{"at":"exit"\}\n$/)
  } finally {
    closeSync(fd)
  }
})

/** A FIFO opened without blocking at both ends: the writer gets EAGAIN once the pipe's buffer is full. */
function nonBlockingPipe(name: string): { reader: number; writer: number } {
  const fifo = path.join(dir, name)
  execFileSync('mkfifo', [fifo])
  const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK)
  const writer = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK)
  return { reader, writer }
}

async function readFor(fd: number, ms: number): Promise<string> {
  const chunks: Buffer[] = []
  const buffer = Buffer.alloc(64 * 1024)
  const until = Date.now() + ms
  while (Date.now() < until) {
    try {
      const read = readSync(fd, buffer)
      if (read > 0) chunks.push(Buffer.from(buffer.subarray(0, read)))
      else await sleep(5)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error
      await sleep(5)
    }
  }
  return Buffer.concat(chunks).toString('utf8')
}

test('a pipe whose reader is slow gets every line, in order, once it reads; the server never blocks', async () => {
  const { reader, writer } = nonBlockingPipe('slow')
  try {
    const destination = batchedLogDestination(writer)
    const written = lines(5000) // 500 kB, far more than the pipe's buffer
    const started = performance.now()
    for (const line of written) destination.write(line)
    await new Promise((resolve) => setImmediate(resolve))
    assert.ok(performance.now() - started < 1000, 'the write did not wait for the reader')
    await sleep(50) // the reader is busy elsewhere
    assert.equal(await readFor(reader, 1500), written.join(''))
  } finally {
    closeSync(reader)
    closeSync(writer)
  }
})

test('past its limit a stuck pipe loses the oldest lines, never a part of a line', async () => {
  const { reader, writer } = nonBlockingPipe('stuck')
  try {
    const destination = batchedLogDestination(writer, { maxHeldBytes: 20_000 })
    const written = lines(3000)
    for (const line of written) destination.write(line)
    await new Promise((resolve) => setImmediate(resolve))
    const received = await readFor(reader, 1000)
    const got = received.split('\n').filter(Boolean)
    assert.ok(got.length < written.length, 'some lines were dropped')
    for (const line of got) assert.match(line, /^\{"line":\d+ *\}$/)
    const numbers = got.map((line) => Number(/\d+/.exec(line)?.[0]))
    assert.deepEqual(
      numbers,
      [...numbers].sort((a, b) => a - b),
      'in order',
    )
    assert.equal(numbers.at(-1), written.length - 1, 'the newest line arrives')
  } finally {
    closeSync(reader)
    closeSync(writer)
  }
})
