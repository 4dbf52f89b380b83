import { hubSignature } from '../../src/modules/channels/whatsapp-cloud.provider.ts'
import { createTestAccount, type Harness, type TestAccount } from './harness.ts'

/** A WhatsApp Cloud number a test file's accounts connect: its address, ids and the secrets its calls carry. */
export interface CloudNumber {
  address: string
  phoneNumberId: string
  wabaId: string
  accessToken: string
  appSecret: string
  verifyToken: string
}

/** A test file's Cloud number, its secrets named after the file (`EAAG-<name>-token`, `<name>-app-secret`, …). */
export function cloudNumber(name: string, phoneNumberId: string, wabaId: string, address = '+4930123456'): CloudNumber {
  const secrets = { accessToken: `EAAG-${name}-token`, appSecret: `${name}-app-secret`, verifyToken: `${name}-verify` }
  return { address, phoneNumberId, wabaId, ...secrets }
}

/** A fresh account whose chat channel is `number` on whatsapp-cloud (the file's fake Graph answers its calls). */
export async function cloudChatAccount(
  harness: Harness,
  number: CloudNumber,
  options: Parameters<typeof createTestAccount>[1] = {},
): Promise<TestAccount> {
  const account = await createTestAccount(harness, options)
  await harness.services.channels.connect(account.accountId, { channel: 'chat', provider: 'whatsapp-cloud', ...number })
  return account
}

/** Posts `raw` to the account's Cloud webhook, signed over those bytes with the number's app secret (or `signature`). */
export function postCloudWebhook(
  harness: Harness,
  account: TestAccount,
  number: CloudNumber,
  raw: string,
  signature = hubSignature(number.appSecret, raw),
) {
  return harness.app.inject({
    method: 'POST',
    url: `/hooks/whatsapp-cloud/${account.accountId}`,
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature },
    payload: raw,
  })
}
