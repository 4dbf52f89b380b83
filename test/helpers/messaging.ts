import { createdContactId } from './contacts.ts'
import { sandboxInbound, setOptin } from './fixtures.ts'
import { createTestAccount, type Harness, type TestAccount } from './harness.ts'

// What the messaging test files set up the same way: an account ready to send to one confirmed contact.

export interface SendSetup {
  account: TestAccount
  contactId: string
  phone: string
}

export interface SendSetupOptions {
  /** the plan's messages a month (default 100) */
  messagesPerMonth?: number
  /** whether the sandbox chat channel is connected (default true) */
  connect?: boolean
  /** the contact's name (default Erika Mustermann) */
  name?: string
  /** the contact writes first, so the 24-hour window is open (only with the channel connected) */
  writesFirst?: boolean
}

/** An account (sandbox chat connected unless `connect: false`) and a contact at `phone` with chat opt-in confirmed. */
export async function sendSetup(harness: Harness, phone: string, options: SendSetupOptions = {}): Promise<SendSetup> {
  const account = await createTestAccount(harness, { plan: { messagesPerMonth: options.messagesPerMonth ?? 100 } })
  const connect = options.connect !== false
  if (connect) await harness.services.channels.connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
  const contactId = await createdContactId(account, { name: options.name ?? 'Erika Mustermann', phone })
  if (connect && options.writesFirst) await sandboxInbound(account, { from: phone, text: 'Hallo' })
  await setOptin(harness, account.accountId, contactId, 'confirmed')
  return { account, contactId, phone }
}
