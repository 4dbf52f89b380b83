import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { sql } from 'drizzle-orm'
import { png } from '../../../test/helpers/files.ts'
import { appMember, contactWhoWrote, sandboxAccount } from '../../../test/helpers/fixtures.ts'
import type { Harness } from '../../../test/helpers/harness.ts'
import { type Json, McpClients, toolFails, toolOk } from '../../../test/helpers/mcp-client.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import { rows } from '../../platform/db/rows.ts'
import { sandboxOutboxOf } from '../channels/index.ts'

// A saved reply's media file is sent with it (issue 48): one media message with the text as caption, through the
// tool server and the console's /app route, kept on the outbound message; on PGlite and (HEROLD_TEST_DATABASE_URL)
// PostgreSQL. The Cloud API's request body is checked in channels/whatsapp-cloud.test.ts.

let harness: Harness
const mcpClients = new McpClients()
harnessPerFile({ mcp: mcpClients }, (created) => {
  harness = created
})

/** A sandbox account with a contact who wrote (chat opt-in confirmed), a member signed in to /app and a picture. */
async function ready() {
  const account = await sandboxAccount(harness, { messagesPerMonth: 100 })
  const { contactId, conversationId } = await contactWhoWrote(harness, account)
  const { call: member } = await appMember(harness, account)
  const uploaded = await account.request({
    method: 'POST',
    url: '/v1/media',
    payload: { data_base64: png(3, 2).toString('base64'), filename: 'lageplan.png', mime: 'image/png' },
  })
  assert.equal(uploaded.statusCode, 200, uploaded.body)
  const media = uploaded.json().media as { id: string; url: string }
  const reply = await member('POST', '/app/saved-replies', {
    code: 'anfahrt',
    title: 'Anfahrt',
    text: 'So finden Sie uns, {{name}}.',
    media_id: media.id,
  })
  assert.equal(reply.status, 201, JSON.stringify(reply.body))
  const outbox = () => sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')
  return {
    account,
    contactId,
    conversationId,
    member,
    media,
    replyId: reply.body.id as string,
    outbox,
  }
}

describe('a saved reply with a media file', () => {
  test('send_saved_reply sends the picture with the text as caption; the thread shows it', async () => {
    const { account, contactId, conversationId, member, media, replyId, outbox } = await ready()
    const client = await mcpClients.connect(account.key)
    const args = { saved_reply_id: replyId, conversation_id: conversationId }
    const before = (await outbox()).length

    const preview = await toolOk(client, 'send_saved_reply', args)
    assert.equal(preview.confirmation_required, true)
    assert.equal(preview.preview.text, 'So finden Sie uns, Erika.')
    assert.equal(preview.preview.media.media_id, media.id)
    assert.equal(preview.preview.media_not_sent, undefined)
    assert.equal((await outbox()).length, before, 'a preview sends nothing')

    const sent = await toolOk(client, 'send_saved_reply', { ...args, confirm_token: preview.confirm_token })
    assert.equal(sent.sent, true)
    assert.equal(sent.media_not_sent, undefined)
    assert.equal(sent.media.media_id, media.id)
    assert.equal(sent.message.type, 'image')
    assert.equal(sent.message.text, 'So finden Sie uns, Erika.')
    assert.equal(sent.message.media_url, media.url)
    assert.equal(sent.message.media_mime, 'image/png')

    const kept = await outbox()
    assert.equal(kept.length, before + 1, 'one message: the picture with its caption')
    const { send_id: _sendId, ...payload } = (kept.at(-1)?.payload ?? {}) as Record<string, unknown>
    assert.deepEqual(payload, {
      type: 'image',
      caption: 'So finden Sie uns, Erika.',
      media: { link: media.url, mime: 'image/png', filename: 'lageplan.png' },
    })

    const thread = await member('GET', `/app/conversations/${conversationId}/messages?limit=10&offset=0`)
    assert.equal(thread.status, 200, JSON.stringify(thread.body))
    const outbound = (thread.body.items as Json[]).filter((m) => m.kind === 'message' && m.direction === 'outbound')
    assert.equal(outbound.length, 1)
    assert.equal(outbound[0].id, sent.message.id)
    assert.equal(outbound[0].type, 'image')
    assert.equal(outbound[0].media_url, media.url)
    assert.equal(outbound[0].media_mime, 'image/png')
    assert.equal(outbound[0].contact_id, contactId)
    // the public address serves the file the provider fetches
    const served = await harness.app.inject({ method: 'GET', url: new URL(media.url).pathname })
    assert.equal(served.statusCode, 200)
    assert.deepEqual(served.rawPayload, png(3, 2))
  })

  test('the console’s send: the edited text as caption; over 1024 characters refused, nothing sent', async () => {
    const { contactId, member, media, replyId, outbox } = await ready()
    const before = (await outbox()).length
    const tooLong = await member('POST', `/app/saved-replies/${replyId}/send`, {
      contact_id: contactId,
      text: 'x'.repeat(1025),
    })
    assert.equal(tooLong.status, 400, JSON.stringify(tooLong.body))
    assert.equal(tooLong.body.error.key, 'caption_too_long')
    assert.equal((await outbox()).length, before)

    const unknown = await member('POST', `/app/saved-replies/${replyId}/send`, { contact_id: contactId, media: 'x' })
    assert.equal(unknown.status, 400, JSON.stringify(unknown.body))

    const sent = await member('POST', `/app/saved-replies/${replyId}/send`, {
      contact_id: contactId,
      text: 'So finden Sie uns – bis gleich!',
    })
    assert.equal(sent.status, 201, JSON.stringify(sent.body))
    assert.equal(sent.body.text, 'So finden Sie uns – bis gleich!')
    assert.equal(sent.body.message.media_url, media.url)
    const kept = await outbox()
    assert.equal(kept.length, before + 1)
    assert.equal(((kept.at(-1)?.payload ?? {}) as Json).caption, 'So finden Sie uns – bis gleich!')
  })

  test('a file gone from the media library meanwhile: a clear 409, nothing sent, no quota used', async () => {
    const { account, contactId, member, media, replyId, outbox } = await ready()
    const client = await mcpClients.connect(account.key)
    const before = (await outbox()).length
    const usage = async () =>
      rows<{ n: number }>(
        await harness.database.orm.execute(
          sql`SELECT coalesce(sum(used), 0)::int AS n FROM message_quota WHERE account_id = ${account.accountId}`,
        ),
      )[0]?.n ?? 0
    const used = await usage()
    // DELETE /media is a 409 while the reply uses it; a removal racing that check is what this stands for
    await harness.database.orm.execute(
      sql`DELETE FROM media WHERE account_id = ${account.accountId} AND id = ${media.id}`,
    )
    const refused = await member('POST', `/app/saved-replies/${replyId}/send`, { contact_id: contactId })
    assert.equal(refused.status, 409, JSON.stringify(refused.body))
    assert.equal(refused.body.error.code, 'saved_reply_media_missing')
    assert.equal(refused.body.error.key, 'media_not_found')
    assert.match(refused.body.error.message, /\/anfahrt.*nothing was sent/)
    const viaTool = await toolFails(
      client,
      'send_saved_reply',
      { saved_reply_id: replyId, contact_id: contactId },
      'saved_reply_media_missing',
    )
    assert.equal(viaTool.media_id, media.id)
    assert.equal((await outbox()).length, before)
    assert.equal(await usage(), used)
  })
})
