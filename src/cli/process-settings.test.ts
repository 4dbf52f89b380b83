import assert from 'node:assert/strict'
import { test } from 'node:test'
import { MALLOC_SETTINGS, serverRelaunch, V8_FLAGS } from './process-settings.ts'

test('a plain start is re-executed with the V8 heap limits and the malloc thresholds', () => {
  const relaunch = serverRelaunch({ PATH: '/bin' }, [], 'linux')
  assert.ok(relaunch)
  assert.deepEqual(relaunch.execArgv, ['--max-semi-space-size=4', '--max-old-space-size=256'])
  assert.deepEqual(V8_FLAGS, relaunch.execArgv)
  assert.equal(relaunch.env.MALLOC_TRIM_THRESHOLD_, MALLOC_SETTINGS.MALLOC_TRIM_THRESHOLD_)
  assert.equal(relaunch.env.MALLOC_MMAP_THRESHOLD_, '131072')
  assert.equal(relaunch.env.PATH, '/bin', 'the rest of the environment is kept')
})

test("node's own arguments are kept after the added flags", () => {
  const relaunch = serverRelaunch({}, ['--expose-gc'], 'linux')
  assert.deepEqual(relaunch?.execArgv, ['--max-semi-space-size=4', '--max-old-space-size=256', '--expose-gc'])
})

test('the re-executed process is not re-executed again', () => {
  const first = serverRelaunch({}, [], 'linux')
  assert.ok(first)
  assert.equal(serverRelaunch(first.env, first.execArgv, 'linux'), null)
})

test("an operator's own value of a flag wins, in NODE_OPTIONS or node's arguments, with - or _", () => {
  const fromOptions = serverRelaunch({ NODE_OPTIONS: '--enable-source-maps --max-old-space-size=1024' }, [], 'linux')
  assert.deepEqual(fromOptions?.execArgv, ['--max-semi-space-size=4'])
  const fromArgs = serverRelaunch({}, ['--max_semi_space_size=16'], 'linux')
  assert.deepEqual(fromArgs?.execArgv, ['--max-old-space-size=256', '--max_semi_space_size=16'])
  const both = { NODE_OPTIONS: '--max-semi-space-size=8 --max-old-space-size=512', ...MALLOC_SETTINGS }
  assert.equal(serverRelaunch(both, [], 'linux'), null)
})

test('a malloc threshold set by the operator turns the malloc settings off, not the heap limits', () => {
  const relaunch = serverRelaunch({ MALLOC_TRIM_THRESHOLD_: '0' }, [], 'linux')
  assert.ok(relaunch)
  assert.equal(relaunch.env.MALLOC_MMAP_THRESHOLD_, undefined)
  assert.equal(relaunch.env.MALLOC_TRIM_THRESHOLD_, '0')
  assert.equal(relaunch.execArgv.length, 2)
})

test('nothing is re-executed outside Linux', () => {
  assert.equal(serverRelaunch({}, [], 'darwin'), null)
})
