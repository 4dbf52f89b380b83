import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createdContactId } from '../../../test/helpers/contacts.ts'
import { createHarness, createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import { deletionConfirmationText } from './channels.deletion-confirmation.ts'
import { sandboxOutboxOf } from './index.ts'

let harness: Harness
before(async () => {
  harness = await createHarness({ config: { allowPrivateTargets: true }, workers: true })
})
after(async () => {
  await channels().close()
  await harness.close()
})

const channels = () => harness.services.channels

async function accountWithEmail(): Promise<TestAccount> {
  const account = await createTestAccount(harness)
  await channels().connect(account.accountId, { channel: 'email', provider: 'sandbox', address: 'shop@example.com' })
  return account
}

const remove = (account: TestAccount, id: string, requested: boolean) =>
  account.request({ method: 'DELETE', url: `/v1/contacts/${id}${requested ? '?requested_by_contact=true' : ''}` })

describe('deletion confirmation to the end customer', () => {
  test('a deletion the customer asked for sends them a confirmation by e-mail: confirmation_sent true', async () => {
    const account = await accountWithEmail()
    const id = await createdContactId(account, { name: 'Ada', email: 'ada@example.org' })
    const response = await remove(account, id, true)
    assert.equal(response.statusCode, 200)
    assert.equal(response.json().confirmation_sent, true)
    assert.equal(response.json().bestaetigung_gesendet, true)
    await harness.jobs!.drain()
    const sent = await sandboxOutboxOf(harness.database.orm, account.accountId, 'email')
    assert.equal(sent.length, 1)
    assert.equal(sent[0].recipient, 'ada@example.org')
    assert.equal(sent[0].payload.subject, deletionConfirmationText('de').subject)
  })

  test('a deletion the customer did not ask for sends nothing', async () => {
    const account = await accountWithEmail()
    const id = await createdContactId(account, { email: 'bob@example.org' })
    const response = await remove(account, id, false)
    assert.equal(response.json().confirmation_sent, false)
    await harness.jobs!.drain()
    assert.equal((await sandboxOutboxOf(harness.database.orm, account.accountId, 'email')).length, 0)
  })

  test('without an e-mail channel, or a contact without e-mail, no confirmation can go out: false', async () => {
    const noChannel = await createTestAccount(harness)
    const first = await createdContactId(noChannel, { email: 'c@example.org' })
    assert.equal((await remove(noChannel, first, true)).json().confirmation_sent, false)

    const withChannel = await accountWithEmail()
    const phoneOnly = await createdContactId(withChannel, { phone: '+4915112345678' })
    assert.equal((await remove(withChannel, phoneOnly, true)).json().confirmation_sent, false)
    await harness.jobs!.drain()
    assert.equal((await sandboxOutboxOf(harness.database.orm, withChannel.accountId, 'email')).length, 0)
  })

  test('the confirmation speaks the contact language, English for languages it does not know', () => {
    assert.match(deletionConfirmationText('de').text, /gelöscht/)
    assert.match(deletionConfirmationText('en_US').text, /deleted/)
    assert.equal(deletionConfirmationText('fi').subject, deletionConfirmationText('en').subject)
  })
})
