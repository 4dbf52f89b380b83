import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { launchBrowser, packagedBrowser } from '../helpers/browser.ts'

// A user's machine has no system browser: the npm-packaged Chromium must work even where CI's machine has one.

let server: Server
let base: string

before(async () => {
  server = createServer((_request, response) => {
    response.setHeader('content-type', 'text/html; charset=utf-8')
    response.end('<!doctype html><title>Probe</title><button onclick="this.textContent=\'clicked\'">press</button>')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
after(() => new Promise<void>((resolve) => server.close(() => resolve())))

describe('the test browser', () => {
  test('the Chromium from npm (@sparticuz/chromium) renders a loopback page and runs its script, page after page', async () => {
    const packaged = await packagedBrowser()
    assert.equal(packaged.source, 'npm')
    const browser = await launchBrowser(packaged)
    try {
      // a closed page must leave the browser running for the next test's page
      for (let round = 0; round < 2; round++) {
        const page = await browser.newPage()
        await page.goto(base)
        assert.equal(await page.title(), 'Probe')
        await page.click('button')
        assert.equal(await page.textContent('button'), 'clicked')
        await page.close()
      }
    } finally {
      await browser.close()
    }
  })
})
