import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { defineField, setFieldValues } from '../../../test/helpers/custom-fields.ts'
import { png } from '../../../test/helpers/files.ts'
import { type AppCall, appMember, contactWhoWrote, sandboxAccount } from '../../../test/helpers/fixtures.ts'
import type { Harness } from '../../../test/helpers/harness.ts'
import { type Json, McpClients, toolFails, toolOk } from '../../../test/helpers/mcp-client.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import { sandboxOutboxOf } from '../channels/index.ts'

// Saved replies (issue 48): managed and rendered through /app with a member's session, sent through the tool server
// with its two-step confirmation; on PGlite and (HEROLD_TEST_DATABASE_URL) PostgreSQL.

let harness: Harness
const mcpClients = new McpClients()
harnessPerFile({ mcp: mcpClients }, (created) => {
  harness = created
})

type Answer = Awaited<ReturnType<AppCall>>

const ok = async (answer: Promise<Answer>, status = 200) => {
  const { status: got, body } = await answer
  assert.equal(got, status, JSON.stringify(body))
  return body
}

const refused = async (answer: Promise<Answer>, status: number, key?: string) => {
  const { status: got, body } = await answer
  assert.equal(got, status, JSON.stringify(body))
  assert.equal(typeof body.error?.code, 'string', JSON.stringify(body))
  if (key) assert.equal(body.error.key, key, JSON.stringify(body))
  return body.error as Json
}

/** A sandbox account with a contact who wrote within 24 hours (chat opt-in confirmed), its conversation and a member. */
async function ready(name = 'Erika Mustermann', email?: string) {
  const account = await sandboxAccount(harness, { messagesPerMonth: 100 })
  const { contactId, conversationId } = await contactWhoWrote(harness, account, { name, email })
  return { account, contactId, conversationId, member: (await appMember(harness, account)).call }
}

describe('saved replies through /app', () => {
  test('create, list with q, get, change, delete; the code rules and a taken code (409)', async () => {
    const { member } = await ready()
    const created = await ok(
      member('POST', '/app/saved-replies', { code: '/danke', title: 'Dank', text: 'Danke, {{name}}!' }),
      201,
    )
    assert.equal(created.code, 'danke', 'stored without the slash')
    assert.deepEqual(created.variables, ['name'])
    assert.equal(created.media, null)
    await ok(
      member('POST', '/app/saved-replies', {
        code: 'oeffnungszeiten',
        title: 'Öffnungszeiten',
        text: 'Mo–Fr 9–17 Uhr',
      }),
      201,
    )
    await ok(
      member('POST', '/app/saved-replies', { code: 'rueckruf_1', title: 'Rückruf', text: 'Wir rufen zurück.' }),
      201,
    )

    const taken = await refused(
      member('POST', '/app/saved-replies', { code: 'danke', title: 'Noch mal', text: 'x' }),
      409,
      'saved_reply_code_taken',
    )
    assert.equal(taken.code, 'saved_reply_code_taken')
    assert.equal(taken.taken_code, 'danke')
    assert.match(taken.message, /\/danke/)

    for (const code of ['Danke', '', 'dan ke', 'dänke', 'a'.repeat(33), '//danke', 'danke!']) {
      const error = await refused(member('POST', '/app/saved-replies', { code, title: 'T', text: 'x' }), 400)
      assert.equal(error.code, 'bad_request')
      assert.match(error.message, /code/, code)
    }
    await ok(member('POST', '/app/saved-replies', { code: 'a'.repeat(32), title: 'Lang', text: 'x' }), 201)
    await refused(member('POST', '/app/saved-replies', { code: 'leer', title: 'T', text: '' }), 400)
    await refused(member('POST', '/app/saved-replies', { code: 'lang', title: 'T', text: 'x'.repeat(4097) }), 400)
    await ok(member('POST', '/app/saved-replies', { code: 'lang', title: 'T', text: 'x'.repeat(4096) }), 201)
    const unknownField = await refused(
      member('POST', '/app/saved-replies', { code: 'neu', title: 'T', text: 'x', shortcut: 'n' }),
      400,
    )
    assert.match(JSON.stringify(unknownField), /shortcut/)

    const listed = await ok(member('GET', '/app/saved-replies'))
    assert.deepEqual(
      listed.saved_replies.map((r: Json) => r.code),
      ['a'.repeat(32), 'danke', 'lang', 'oeffnungszeiten', 'rueckruf_1'],
    )
    const byCode = await ok(member('GET', '/app/saved-replies?q=%2Fdan'))
    assert.deepEqual(
      byCode.saved_replies.map((r: Json) => r.code),
      ['danke'],
    )
    const byTitle = await ok(member('GET', '/app/saved-replies?q=r%C3%BCckruf'))
    assert.deepEqual(
      byTitle.saved_replies.map((r: Json) => r.code),
      ['rueckruf_1'],
    )
    const wildcard = await ok(member('GET', '/app/saved-replies?q=_'))
    assert.deepEqual(
      wildcard.saved_replies.map((r: Json) => r.code),
      ['rueckruf_1'],
      '_ is a character, not a wildcard',
    )

    assert.equal((await ok(member('GET', `/app/saved-replies/${created.id}`))).text, 'Danke, {{name}}!')
    const changed = await ok(
      member('PATCH', `/app/saved-replies/${created.id}`, {
        title: 'Danke schön',
        text: 'Vielen Dank, {{full_name}}.',
      }),
    )
    assert.equal(changed.code, 'danke')
    assert.equal(changed.title, 'Danke schön')
    assert.deepEqual(changed.variables, ['full_name'])
    await refused(member('PATCH', `/app/saved-replies/${created.id}`, { code: 'lang' }), 409, 'saved_reply_code_taken')
    await refused(member('PATCH', `/app/saved-replies/${created.id}`, { colour: 'red' }), 400)
    assert.equal((await ok(member('PATCH', `/app/saved-replies/${created.id}`, { code: 'merci' }))).code, 'merci')

    assert.deepEqual(await ok(member('DELETE', `/app/saved-replies/${created.id}`)), { id: created.id, deleted: true })
    await refused(member('GET', `/app/saved-replies/${created.id}`), 404)
    await refused(member('GET', '/app/saved-replies/not-a-uuid'), 404)
  })

  test('a variable no contact can fill is refused, named; a custom field of the account is one', async () => {
    const { account, member } = await ready()
    const refusedText = await refused(
      member('POST', '/app/saved-replies', {
        code: 'code',
        title: 'T',
        text: 'Ihr Code: {{gutschein}} {{ Name }} {{1}}',
      }),
      400,
      'saved_reply_unknown_variable',
    )
    assert.deepEqual(refusedText.variables, [
      { name: 'gutschein', problem: 'unknown' },
      { name: ' Name ', problem: 'invalid' },
      { name: '1', problem: 'unknown' },
    ])
    assert.match(refusedText.message, /gutschein/)
    await defineField(harness, account.accountId, { key: 'gutschein', type: 'text' })
    const saved = await ok(
      member('POST', '/app/saved-replies', { code: 'code', title: 'T', text: 'Ihr Code: {{gutschein}}' }),
      201,
    )
    assert.deepEqual(saved.variables, ['gutschein'])
  })

  test('render fills name and a custom field from the contact; a missing value is 422 naming it', async () => {
    const { account, contactId, conversationId, member } = await ready('Erika Mustermann')
    await defineField(harness, account.accountId, { key: 'kundennummer', type: 'text' })
    await defineField(harness, account.accountId, { key: 'tarif', type: 'text', defaultValue: 'Basis' })
    await defineField(harness, account.accountId, { key: 'termin', type: 'text' })
    await setFieldValues(harness, account.accountId, contactId, { kundennummer: 'K-4711' })
    const reply = await ok(
      member('POST', '/app/saved-replies', {
        code: 'nummer',
        title: 'Kundennummer',
        text: 'Hallo {{name}}, Ihre Nummer ist {{kundennummer}} ({{tarif}}), {{full_name}}.',
      }),
      201,
    )
    const expected = 'Hallo Erika, Ihre Nummer ist K-4711 (Basis), Erika Mustermann.'
    const byConversation = await ok(
      member('POST', `/app/saved-replies/${reply.id}/render`, { conversation_id: conversationId }),
    )
    assert.deepEqual(byConversation, { saved_reply_id: reply.id, contact_id: contactId, text: expected, media: null })
    const byContact = await ok(member('POST', `/app/saved-replies/${reply.id}/render`, { contact_id: contactId }))
    assert.equal(byContact.text, expected)

    const needsMore = await ok(
      member('POST', '/app/saved-replies', { code: 'mehr', title: 'T', text: '{{name}}: {{email}} am {{termin}}' }),
      201,
    )
    const missing = await refused(
      member('POST', `/app/saved-replies/${needsMore.id}/render`, { contact_id: contactId }),
      422,
      'invalid_variables',
    )
    assert.equal(missing.code, 'invalid_variables')
    assert.deepEqual(missing.variables, [
      { name: 'email', problem: 'no_value' },
      { name: 'termin', problem: 'no_value' },
    ])
    assert.match(missing.message, /email, termin/)

    // neither or both targets, an id that is no uuid
    await refused(member('POST', `/app/saved-replies/${reply.id}/render`, {}), 400, 'conversation_or_contact')
    await refused(
      member('POST', `/app/saved-replies/${reply.id}/render`, {
        contact_id: contactId,
        conversation_id: conversationId,
      }),
      400,
      'conversation_or_contact',
    )
    await refused(member('POST', `/app/saved-replies/${reply.id}/render`, { contact_id: 'nope' }), 400)
    await refused(
      member('POST', `/app/saved-replies/${reply.id}/render`, { contact_id: '00000000-0000-4000-8000-000000000000' }),
      404,
    )
  })

  test('another account’s saved reply, contact, conversation and media are 404; its list is its own', async () => {
    const mine = await ready('Anna Eigen')
    const theirs = await ready('Otto Fremd')
    const own = await ok(
      mine.member('POST', '/app/saved-replies', { code: 'hallo', title: 'Hallo', text: 'Hallo {{name}}' }),
      201,
    )
    const other = await ok(
      theirs.member('POST', '/app/saved-replies', { code: 'hallo', title: 'Hallo', text: 'Servus {{name}}' }),
      201,
      // the same code in another account is no clash
    )
    for (const [method, url, payload] of [
      ['GET', `/app/saved-replies/${other.id}`, undefined],
      ['PATCH', `/app/saved-replies/${other.id}`, { title: 'Meins' }],
      ['DELETE', `/app/saved-replies/${other.id}`, undefined],
      ['POST', `/app/saved-replies/${other.id}/render`, { contact_id: mine.contactId }],
      ['POST', `/app/saved-replies/${own.id}/render`, { contact_id: theirs.contactId }],
      ['POST', `/app/saved-replies/${own.id}/render`, { conversation_id: theirs.conversationId }],
    ] as const) {
      await refused(mine.member(method, url, payload), 404)
    }
    assert.deepEqual(
      (await ok(mine.member('GET', '/app/saved-replies'))).saved_replies.map((r: Json) => r.id),
      [own.id],
    )
    assert.equal((await ok(theirs.member('GET', `/app/saved-replies/${other.id}`))).title, 'Hallo', 'unchanged')

    const uploaded = await theirs.account.request({
      method: 'POST',
      url: '/v1/media',
      payload: { data_base64: png(2, 2).toString('base64'), filename: 'fremd.png', mime: 'image/png' },
    })
    assert.equal(uploaded.statusCode, 200, uploaded.body)
    await refused(
      mine.member('POST', '/app/saved-replies', {
        code: 'bild',
        title: 'Bild',
        text: 'x',
        media_id: uploaded.json().media.id,
      }),
      404,
      'media_not_found',
    )
  })

  test('a media file of the library: shown with the reply and rendered; DELETE /media is 409 while used', async () => {
    const { account, contactId, member } = await ready()
    const uploaded = await account.request({
      method: 'POST',
      url: '/v1/media',
      payload: { data_base64: png(3, 2).toString('base64'), filename: 'lageplan.png', mime: 'image/png' },
    })
    assert.equal(uploaded.statusCode, 200, uploaded.body)
    const media = uploaded.json().media
    const reply = await ok(
      member('POST', '/app/saved-replies', {
        code: 'anfahrt',
        title: 'Anfahrt',
        text: 'So finden Sie uns.',
        media_id: media.id,
      }),
      201,
    )
    assert.deepEqual(reply.media, {
      media_id: media.id,
      url: media.url,
      mime_type: 'image/png',
      kind: 'image',
      filename: 'lageplan.png',
    })
    const rendered = await ok(member('POST', `/app/saved-replies/${reply.id}/render`, { contact_id: contactId }))
    assert.equal(rendered.media.media_id, media.id)
    const inUse = await account.request({ method: 'DELETE', url: `/v1/media/${media.id}` })
    assert.equal(inUse.statusCode, 409, inUse.body)
    assert.match(inUse.body, /saved reply \/anfahrt/)
    assert.equal((await ok(member('PATCH', `/app/saved-replies/${reply.id}`, { media_id: null }))).media, null)
    const freed = await account.request({ method: 'DELETE', url: `/v1/media/${media.id}` })
    assert.equal(freed.statusCode, 200, freed.body)
  })
})

describe('saved replies through the tool server', () => {
  test('create, list and delete (two-step); send_saved_reply previews, then sends the rendered text once', async () => {
    const { account, contactId, conversationId } = await ready('Erika Mustermann')
    const client = await mcpClients.connect(account.key)
    const outbox = () => sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')

    const created = await toolOk(client, 'create_saved_reply', {
      code: 'danke',
      title: 'Dank',
      text: 'Danke für Ihre Nachricht, {{name}}!',
    })
    await toolFails(client, 'create_saved_reply', { code: 'danke', title: 'x', text: 'x' }, 'saved_reply_code_taken')
    assert.deepEqual(
      (await toolOk(client, 'list_saved_replies', { q: 'dank' })).saved_replies.map((r: Json) => r.id),
      [created.id],
    )
    const rendered = await toolOk(client, 'render_saved_reply', { saved_reply_id: created.id, contact_id: contactId })
    assert.equal(rendered.text, 'Danke für Ihre Nachricht, Erika!')

    const args = { saved_reply_id: created.id, conversation_id: conversationId }
    const before = (await outbox()).length
    const preview = await toolOk(client, 'send_saved_reply', args)
    assert.equal(preview.confirmation_required, true)
    assert.equal(preview.executed, false)
    assert.equal(preview.preview.text, 'Danke für Ihre Nachricht, Erika!')
    assert.equal(preview.preview.to.contact_id, contactId)
    assert.equal((await outbox()).length, before, 'a preview sends nothing')
    await toolFails(
      client,
      'send_saved_reply',
      { ...args, conversation_id: undefined, contact_id: contactId, confirm_token: preview.confirm_token },
      'confirm_token_invalid',
    )
    const sent = await toolOk(client, 'send_saved_reply', { ...args, confirm_token: preview.confirm_token })
    assert.equal(sent.sent, true)
    assert.equal(sent.message.text, 'Danke für Ihre Nachricht, Erika!')
    assert.equal(sent.text, 'Danke für Ihre Nachricht, Erika!')
    const after = await outbox()
    assert.equal(after.length, before + 1)
    assert.match(JSON.stringify(after.at(-1)), /Danke für Ihre Nachricht, Erika!/)
    await toolFails(
      client,
      'send_saved_reply',
      { ...args, confirm_token: preview.confirm_token },
      'confirm_token_invalid',
    )

    // a contact without an e-mail address: refused naming the variable, nothing sent
    const withEmail = await toolOk(client, 'create_saved_reply', {
      code: 'mail',
      title: 'Mail',
      text: 'Wir schreiben an {{email}}.',
    })
    const refusedSend = await toolFails(
      client,
      'send_saved_reply',
      { saved_reply_id: withEmail.id, contact_id: contactId },
      'invalid_variables',
    )
    assert.deepEqual(refusedSend.variables, [{ name: 'email', problem: 'no_value' }])
    assert.equal((await outbox()).length, before + 1)

    const deletion = await toolOk(client, 'delete_saved_reply', { saved_reply_id: withEmail.id })
    assert.equal(deletion.confirmation_required, true)
    assert.equal(deletion.preview.saved_reply.code, 'mail')
    await toolOk(client, 'delete_saved_reply', { saved_reply_id: withEmail.id, confirm_token: deletion.confirm_token })
    await toolFails(client, 'get_saved_reply', { saved_reply_id: withEmail.id }, 'not_found')

    // another account's saved reply is not found, whatever the tool
    const other = await ready('Otto Fremd')
    const foreign = await ok(other.member('POST', '/app/saved-replies', { code: 'x', title: 'x', text: 'x' }), 201)
    await toolFails(client, 'send_saved_reply', { saved_reply_id: foreign.id, contact_id: contactId }, 'not_found')
    await toolFails(client, 'update_saved_reply', { saved_reply_id: foreign.id, title: 'y' }, 'not_found')
  })
})
