import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import type { Browser } from 'playwright-core'
import { launchBrowser } from '../../../test/helpers/browser.ts'
import { createHarness, createTestAccount, type Harness, json } from '../../../test/helpers/harness.ts'

// The landing page in a real browser (test/helpers/browser.ts), driven by playwright-core.

let harness: Harness
let browser: Browser
let base: string

before(async () => {
  harness = await createHarness({ config: { allowPrivateTargets: true }, workers: true })
  await harness.app.listen({ port: 0, host: '127.0.0.1' })
  base = `http://127.0.0.1:${(harness.app.server.address() as AddressInfo).port}`
  browser = await launchBrowser()
})
after(async () => {
  await browser?.close()
  await harness.close()
})

describe('landing page in headless Chromium', () => {
  test('fill the form, submit, see the confirmation page; the contact is pending on both channels', async () => {
    const account = await createTestAccount(harness, { name: 'Blumen Erika' })
    const channels = harness.services.channels
    await channels.connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
    await channels.connect(account.accountId, {
      channel: 'email',
      provider: 'sandbox',
      address: 'shop@example.com',
    })
    const page = await browser.newPage()
    try {
      const opened = await page.goto(`${base}/public/signup/${account.accountId}`)
      assert.equal(opened?.status(), 200)
      assert.equal(await page.locator('h1').textContent(), 'Blumen Erika')
      await page.fill('#name', 'Erika Muster')
      await page.fill('#phone', '+49 151 23456789')
      await page.fill('#email', 'erika@example.org')
      await page.check('#consent')
      await Promise.all([page.waitForURL(`**/public/signup/${account.accountId}`), page.click('button[type=submit]')])
      assert.equal(await page.locator('#done').textContent(), 'Almost done')
    } finally {
      await page.close()
    }
    // the sign-up is applied by a job after the answer
    await harness.jobs?.drain()
    const { contacts } = json<{
      contacts: Array<{
        name: string
        phone: string
        email: string
        source: string
        optin_chat: string
        optin_email: string
      }>
    }>(await account.request({ method: 'GET', url: '/v1/contacts' }))
    assert.equal(contacts.length, 1)
    const { name, phone, email, source, optin_chat, optin_email } = contacts[0]
    assert.deepEqual(
      { name, phone, email, source, optin_chat, optin_email },
      {
        name: 'Erika Muster',
        phone: '+4915123456789',
        email: 'erika@example.org',
        source: 'landing',
        optin_chat: 'pending',
        optin_email: 'pending',
      },
    )
  })

  test('without the consent box the browser shows the form again with the error and nothing is stored', async () => {
    const account = await createTestAccount(harness)
    const page = await browser.newPage()
    try {
      await page.goto(`${base}/public/signup/${account.accountId}`)
      await page.fill('#email', 'anna@example.org')
      await page.click('button[type=submit]')
      await page.waitForSelector('#error')
      assert.match(String(await page.locator('#error').textContent()), /agree/)
      assert.equal(await page.inputValue('#email'), 'anna@example.org', 'the entered values are kept')
    } finally {
      await page.close()
    }
    const { contacts } = json<{ contacts: unknown[] }>(await account.request({ method: 'GET', url: '/v1/contacts' }))
    assert.equal(contacts.length, 0)
  })
})
