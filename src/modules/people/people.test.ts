import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { simpleParser } from 'mailparser'
import { unique } from '../../../test/helpers/fixtures.ts'
import { createHarness, createTestAccount, type Harness, json } from '../../../test/helpers/harness.ts'
import { type SmtpSink, startSmtpSink } from '../../../test/helpers/smtp-sink.ts'
import { issueToken, SETUP_TTL_MS } from '../../platform/auth/user-tokens.ts'
import { createMember } from './index.ts'
import { SIGN_IN_PER_ACCOUNT, SIGN_IN_PER_ADDRESS } from './people.app.ts'

let harness: Harness
let smtp: SmtpSink

before(async () => {
  smtp = await startSmtpSink()
  harness = await createHarness({
    config: { smtpUrl: `smtp://127.0.0.1:${smtp.port}`, mailFrom: 'herold@example.org' },
  })
})
after(async () => {
  await harness.close()
  await smtp.close()
})

const nextEmail = () => `person-${unique()}@example.org`
// every test signs in from its own address, so the per-address limit of one test never touches another
let addresses = 0
const nextIp = () => `10.${process.pid % 250}.${Math.floor(++addresses / 250)}.${addresses % 250}`
const PASSWORD = 'correct horse battery'

/** A browser: it keeps the session cookie and the CSRF token, and sends them like the app does. */
class Browser {
  cookie = ''
  csrf = ''
  ip = nextIp()
  async request(method: string, url: string, body?: unknown, options: { csrf?: boolean } = {}) {
    const headers: Record<string, string> = {}
    if (this.cookie) headers.cookie = this.cookie
    if (this.csrf && options.csrf !== false && method !== 'GET') headers['x-csrf-token'] = this.csrf
    const response = await harness.app.inject({
      method: method as 'GET',
      url,
      headers,
      remoteAddress: this.ip,
      ...(body === undefined ? {} : { payload: body as Record<string, unknown> }),
    })
    const setCookie = response.headers['set-cookie']
    if (setCookie) {
      const value = String(Array.isArray(setCookie) ? setCookie[0] : setCookie).split(';')[0]
      this.cookie = value.endsWith('=') ? '' : value
    }
    const isJson = String(response.headers['content-type'] ?? '').startsWith('application/json')
    if (response.statusCode < 300 && isJson && typeof json(response).csrf_token === 'string') {
      this.csrf = json(response).csrf_token as string
    }
    return response
  }
}

function expectError(response: LightMyRequestResponse, status: number, code: string) {
  assert.equal(response.statusCode, status, response.body)
  assert.equal(json<{ error: { code: string } }>(response).error.code, code, response.body)
}

/** A first-start setup link's token for the account. */
const setupToken = (accountId: string) =>
  issueToken(harness.database.orm, harness.clock, { kind: 'setup', ttlMs: SETUP_TTL_MS, accountId })

async function setupOwner() {
  const account = await createTestAccount(harness)
  const token = await setupToken(account.accountId)
  const owner = new Browser()
  const email = nextEmail()
  const created = await owner.request('POST', '/app/setup', { token, name: 'Olga Owner', email, password: PASSWORD })
  assert.equal(created.statusCode, 201, created.body)
  return { account, owner, email, token }
}

/** The link of the last e-mail sent to an address (a reset's e-mail leaves after the answer: waited for). */
async function linkSentTo(email: string, path: string, before = 0): Promise<string> {
  const sentTo = () => smtp.arrived.filter((m) => m.to.includes(email))
  for (let waited = 0; sentTo().length <= before && waited < 10_000; waited += 20) {
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  const mail = sentTo().at(-1)
  assert.ok(mail, `an e-mail to ${email}`)
  const text = (await simpleParser(mail.raw)).text ?? ''
  const match = new RegExp(`http://herold\\.test/${path}/([A-Za-z0-9_-]+)`).exec(text)
  assert.ok(match, text)
  return match[1]
}

async function inviteAndAccept(owner: Browser, role: string) {
  const email = nextEmail()
  const invited = await owner.request('POST', '/app/team/invitations', { email, role })
  assert.equal(invited.statusCode, 201, invited.body)
  assert.equal(json(invited).email_sent, true)
  assert.equal(json(invited).invite_url, undefined, 'the link leaves only by e-mail when e-mail works')
  const token = await linkSentTo(email, 'invitations')
  const person = new Browser()
  const info = await person.request('GET', `/app/invitations/${token}`)
  assert.equal(info.statusCode, 200, info.body)
  assert.equal(json(info).email, email)
  assert.equal(json(info).needs_password, true)
  const accepted = await person.request('POST', '/app/invitations/accept', {
    token,
    name: `A ${role}`,
    password: PASSWORD,
  })
  assert.equal(accepted.statusCode, 201, accepted.body)
  return { person, email, token, id: json<{ member: { id: string } }>(invited).member.id }
}

describe('first-start setup link', () => {
  test('creates the owner once, signs them in with an HTTP-only SameSite=Lax cookie, and is used up', async () => {
    const account = await createTestAccount(harness)
    const token = await setupToken(account.accountId)
    const browser = new Browser()
    assert.equal((await browser.request('GET', `/app/setup/${token}`)).statusCode, 200)
    const email = nextEmail()
    const created = await browser.request('POST', '/app/setup', { token, name: 'Olga', email, password: PASSWORD })
    assert.equal(created.statusCode, 201, created.body)
    const cookie = String(created.headers['set-cookie'])
    assert.match(cookie, /^herold_session=hs_[A-Za-z0-9_-]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+$/)
    assert.doesNotMatch(cookie, /Secure/, 'http://herold.test is not https')
    assert.equal(json(created).role, 'owner')
    const me = await browser.request('GET', '/v1/me')
    assert.equal(me.statusCode, 200, me.body)
    assert.equal(json(me).auth_type, 'session')
    assert.deepEqual(json(me).account, { id: account.accountId, name: 'Test account' })
    // used up
    expectError(await new Browser().request('GET', `/app/setup/${token}`), 410, 'link_invalid')
    expectError(
      await new Browser().request('POST', '/app/setup', { token, name: 'Eve', email: nextEmail(), password: PASSWORD }),
      410,
      'link_invalid',
    )
  })

  test('an expired setup link and a short password are refused', async () => {
    const account = await createTestAccount(harness)
    const token = await setupToken(account.accountId)
    const short = await new Browser().request('POST', '/app/setup', {
      token,
      name: 'O',
      email: nextEmail(),
      password: 'short',
    })
    expectError(short, 400, 'bad_request')
    harness.clock.advance(SETUP_TTL_MS + 1000)
    try {
      expectError(await new Browser().request('GET', `/app/setup/${token}`), 410, 'link_invalid')
    } finally {
      harness.clock.advance(-(SETUP_TTL_MS + 1000))
    }
  })
})

describe('sessions and CSRF', () => {
  test('a state-changing request with the session but without its CSRF token is refused, with it allowed', async () => {
    const { owner } = await setupOwner()
    const body = { email: `c-${unique()}@example.org` }
    expectError(await owner.request('POST', '/v1/contacts', body, { csrf: false }), 403, 'csrf_invalid')
    const wrong = await harness.app.inject({
      method: 'POST',
      url: '/v1/contacts',
      headers: { cookie: owner.cookie, 'x-csrf-token': 'x'.repeat(43) },
      payload: body,
    })
    expectError(wrong, 403, 'csrf_invalid')
    assert.equal((await owner.request('GET', '/v1/contacts')).statusCode, 200, 'reads need no token')
    const created = await owner.request('POST', '/v1/contacts', body)
    assert.equal(created.statusCode, 201, created.body)
    expectError(await owner.request('POST', '/app/sign-out', undefined, { csrf: false }), 403, 'csrf_invalid')
  })

  test('sign-out ends the session on the server: the old cookie no longer works', async () => {
    const { owner } = await setupOwner()
    const old = owner.cookie
    const out = await owner.request('POST', '/app/sign-out')
    assert.equal(out.statusCode, 204, out.body)
    assert.match(String(out.headers['set-cookie']), /Max-Age=0/)
    const replay = await harness.app.inject({ method: 'GET', url: '/v1/me', headers: { cookie: old } })
    expectError(replay, 401, 'unauthorized')
    expectError(
      await harness.app.inject({ method: 'GET', url: '/app/session', headers: { cookie: old } }),
      401,
      'unauthorized',
    )
  })

  test('sign-in: a wrong password and an unknown address answer alike; the right one starts a session', async () => {
    const { email } = await setupOwner()
    expectError(
      await new Browser().request('POST', '/app/sign-in', { email, password: 'wrong password!' }),
      401,
      'sign_in_failed',
    )
    expectError(
      await new Browser().request('POST', '/app/sign-in', { email: nextEmail(), password: PASSWORD }),
      401,
      'sign_in_failed',
    )
    const browser = new Browser()
    const signedIn = await browser.request('POST', '/app/sign-in', { email: email.toUpperCase(), password: PASSWORD })
    assert.equal(signedIn.statusCode, 200, signedIn.body)
    assert.equal((await browser.request('GET', '/app/session')).statusCode, 200)
  })

  test('sign-in is limited per account (whatever the address) and per address (whatever the account)', async () => {
    const { email } = await setupOwner()
    for (let i = 0; i < SIGN_IN_PER_ACCOUNT; i++) {
      expectError(
        await new Browser().request('POST', '/app/sign-in', { email, password: 'wrong password!' }),
        401,
        'sign_in_failed',
      )
    }
    const blocked = await new Browser().request('POST', '/app/sign-in', { email, password: PASSWORD })
    expectError(blocked, 429, 'rate_limited')
    assert.ok(Number(blocked.headers['retry-after']) > 0)

    const one = new Browser()
    for (let i = 0; i < SIGN_IN_PER_ADDRESS; i++) {
      expectError(
        await one.request('POST', '/app/sign-in', { email: nextEmail(), password: PASSWORD }),
        401,
        'sign_in_failed',
      )
    }
    expectError(
      await one.request('POST', '/app/sign-in', { email: nextEmail(), password: PASSWORD }),
      429,
      'rate_limited',
    )
  })

  test('a password change ends every session of the member and gives this browser a new one', async () => {
    const { owner, email } = await setupOwner()
    const elsewhere = new Browser()
    assert.equal((await elsewhere.request('POST', '/app/sign-in', { email, password: PASSWORD })).statusCode, 200)
    expectError(
      await owner.request('POST', '/app/password', {
        current_password: 'not it at all',
        new_password: 'another long one',
      }),
      403,
      'forbidden',
    )
    const old = owner.cookie
    const changed = await owner.request('POST', '/app/password', {
      current_password: PASSWORD,
      new_password: 'another long one',
    })
    assert.equal(changed.statusCode, 200, changed.body)
    assert.notEqual(owner.cookie, old)
    assert.equal((await owner.request('GET', '/v1/me')).statusCode, 200, 'the new session works')
    expectError(await elsewhere.request('GET', '/v1/me'), 401, 'unauthorized')
    expectError(
      await harness.app.inject({ method: 'GET', url: '/v1/me', headers: { cookie: old } }),
      401,
      'unauthorized',
    )
    expectError(
      await new Browser().request('POST', '/app/sign-in', { email, password: PASSWORD }),
      401,
      'sign_in_failed',
    )
    assert.equal(
      (await new Browser().request('POST', '/app/sign-in', { email, password: 'another long one' })).statusCode,
      200,
    )
  })
})

describe('password reset by e-mail link', () => {
  test('the link sets a new password once, ends every session, and expires after an hour', async () => {
    const { owner, email } = await setupOwner()
    const asked = await new Browser().request('POST', '/app/password-reset', { email })
    assert.equal(asked.statusCode, 202)
    const token = await linkSentTo(email, 'reset')
    const done = await new Browser().request('POST', '/app/password-reset/complete', {
      token,
      password: 'fresh password 1',
    })
    assert.equal(done.statusCode, 204, done.body)
    expectError(await owner.request('GET', '/v1/me'), 401, 'unauthorized')
    expectError(
      await new Browser().request('POST', '/app/password-reset/complete', { token, password: 'fresh password 2' }),
      410,
      'link_invalid',
    )
    assert.equal(
      (await new Browser().request('POST', '/app/sign-in', { email, password: 'fresh password 1' })).statusCode,
      200,
    )

    const sent = smtp.arrived.filter((m) => m.to.includes(email)).length
    await new Browser().request('POST', '/app/password-reset', { email })
    const late = await linkSentTo(email, 'reset', sent)
    assert.notEqual(late, token)
    harness.clock.advance(61 * 60 * 1000)
    try {
      expectError(
        await new Browser().request('POST', '/app/password-reset/complete', {
          token: late,
          password: 'fresh password 3',
        }),
        410,
        'link_invalid',
      )
    } finally {
      harness.clock.advance(-61 * 60 * 1000)
    }
  })

  test('an unknown address is answered 202 like a known one, and no e-mail leaves', async () => {
    const before = smtp.arrived.length
    const stranger = nextEmail()
    assert.equal((await new Browser().request('POST', '/app/password-reset', { email: stranger })).statusCode, 202)
    assert.equal(smtp.arrived.filter((m) => m.to.includes(stranger)).length, 0)
    assert.ok(smtp.arrived.length >= before)
  })
})

describe('team and roles', () => {
  test('an invited viewer can read but the server refuses every change, in /v1 and /app', async () => {
    const { owner } = await setupOwner()
    const { person: viewer } = await inviteAndAccept(owner, 'viewer')
    const session = await viewer.request('GET', '/app/session')
    assert.equal(json(session).role, 'viewer')
    assert.equal((await viewer.request('GET', '/v1/contacts')).statusCode, 200)
    const refused = await viewer.request('POST', '/v1/contacts', { email: `v-${unique()}@example.org` })
    expectError(refused, 403, 'forbidden')
    assert.equal(json<{ error: { key: string } }>(refused).error.key, 'apikey_scope_fehlt')
    expectError(await viewer.request('GET', '/app/keys'), 403, 'forbidden')
    expectError(
      await viewer.request('POST', '/app/keys', { name: 'mine', scopes: ['contacts:read'] }),
      403,
      'forbidden',
    )
    expectError(
      await viewer.request('POST', '/app/team/invitations', { email: nextEmail(), role: 'owner' }),
      403,
      'forbidden',
    )
  })

  test('a role change takes effect on the next request; a removed member is signed out at once', async () => {
    const { owner } = await setupOwner()
    const { person, id } = await inviteAndAccept(owner, 'member')
    assert.equal((await person.request('POST', '/v1/contacts', { email: `m-${unique()}@example.org` })).statusCode, 201)
    const changed = await owner.request('PATCH', `/app/team/${id}`, { role: 'viewer' })
    assert.equal(changed.statusCode, 200, changed.body)
    expectError(await person.request('POST', '/v1/contacts', { email: `m-${unique()}@example.org` }), 403, 'forbidden')
    const removed = await owner.request('DELETE', `/app/team/${id}`)
    assert.equal(removed.statusCode, 200, removed.body)
    expectError(await person.request('GET', '/v1/me'), 401, 'unauthorized')
  })

  test('owners stay: the last owner cannot be demoted or removed, and an admin cannot touch an owner', async () => {
    const { owner } = await setupOwner()
    const me = json<{ user: { id: string } }>(await owner.request('GET', '/app/session')).user.id
    expectError(await owner.request('PATCH', `/app/team/${me}`, { role: 'admin' }), 409, 'last_owner')
    expectError(await owner.request('DELETE', `/app/team/${me}`), 409, 'last_owner')
    const { person: admin } = await inviteAndAccept(owner, 'admin')
    expectError(await admin.request('DELETE', `/app/team/${me}`), 403, 'forbidden')
    expectError(
      await admin.request('POST', '/app/team/invitations', { email: nextEmail(), role: 'owner' }),
      403,
      'forbidden',
    )
    const { id: memberId } = await inviteAndAccept(owner, 'member')
    assert.equal((await admin.request('PATCH', `/app/team/${memberId}`, { role: 'viewer' })).statusCode, 200)
  })

  test("GET /v1/team lists the account's members, paginated, with status; another account sees none of them", async () => {
    const { owner, account, email } = await setupOwner()
    harness.clock.advance(1000) // oldest membership first: give each its own second
    const { email: memberEmail } = await inviteAndAccept(owner, 'member')
    harness.clock.advance(1000)
    const pending = nextEmail()
    assert.equal(
      (await owner.request('POST', '/app/team/invitations', { email: pending, role: 'viewer' })).statusCode,
      201,
    )
    const team = await account.request({ method: 'GET', url: '/v1/team' })
    assert.equal(team.statusCode, 200, team.body)
    const members = json<{
      members: Array<{ email: string; role: string; status: string; last_active_at: string | null }>
    }>(team).members
    assert.deepEqual(
      members.map((m) => [m.email, m.role, m.status]),
      [
        [email, 'owner', 'active'],
        [memberEmail, 'member', 'active'],
        [pending, 'viewer', 'invited'],
      ],
    )
    assert.ok(members[0].last_active_at, 'the owner used the app')
    assert.equal(members[2].last_active_at, null)
    const first = await account.request({ method: 'GET', url: '/v1/team?limit=2' })
    assert.equal(json(first).has_more, true)
    assert.equal(json(first).next_offset, 2)
    const rest = await account.request({ method: 'GET', url: '/v1/team?limit=2&offset=2' })
    assert.deepEqual(
      json<{ members: Array<{ email: string }> }>(rest).members.map((m) => m.email),
      [pending],
    )
    // the team list's offset has no maximum: one past any row count is an empty page, not a failed query
    const far = await account.request({ method: 'GET', url: '/v1/team?offset=1e21' })
    assert.equal(far.statusCode, 200, far.body)
    assert.deepEqual(json(far).members, [])

    const other = await createTestAccount(harness)
    const foreign = await other.request({ method: 'GET', url: '/v1/team' })
    assert.deepEqual(json(foreign).members, [])
    const { member } = json<{ member: { id: string } }>(
      await owner.request('POST', '/app/team/invitations', { email: nextEmail(), role: 'viewer' }),
    )
    const { owner: otherOwner } = await setupOwner()
    expectError(await otherOwner.request('DELETE', `/app/team/${member.id}`), 404, 'not_found')
    const noScope = await createTestAccount(harness, { scopes: ['contacts:read'] })
    expectError(await noScope.request({ method: 'GET', url: '/v1/team' }), 403, 'forbidden')
  })

  test('an invitation without working e-mail hands the link to the inviter; the CLI-made member signs in', async () => {
    const noMail = await createHarness({ config: { smtpUrl: undefined } })
    try {
      const account = await createTestAccount(noMail)
      const email = nextEmail()
      await createMember(noMail.database.orm, {
        accountId: account.accountId,
        email,
        name: 'Cli',
        password: PASSWORD,
        role: 'admin',
      })
      const signIn = await noMail.app.inject({
        method: 'POST',
        url: '/app/sign-in',
        payload: { email, password: PASSWORD },
        remoteAddress: nextIp(),
      })
      assert.equal(signIn.statusCode, 200, signIn.body)
      const cookie = String(signIn.headers['set-cookie']).split(';')[0]
      const invited = await noMail.app.inject({
        method: 'POST',
        url: '/app/team/invitations',
        headers: { cookie, 'x-csrf-token': json(signIn).csrf_token as string },
        payload: { email: nextEmail(), role: 'member' },
      })
      assert.equal(invited.statusCode, 201, invited.body)
      assert.equal(json(invited).email_sent, false)
      assert.match(String(json(invited).invite_url), /^http:\/\/herold\.test\/invitations\/[A-Za-z0-9_-]{43}$/)
    } finally {
      await noMail.close()
    }
  })
})

describe('API keys from the app', () => {
  test('an owner creates a key (secret shown once), uses it, and revokes it; a foreign key id is a 404', async () => {
    const { owner, account } = await setupOwner()
    const created = await owner.request('POST', '/app/keys', { name: 'shop', scopes: ['contacts:read'] })
    assert.equal(created.statusCode, 201, created.body)
    const { key, secret } = json<{ key: { id: string; prefix: string }; secret: string }>(created)
    assert.match(secret, /^hk_/)
    const listed = await owner.request('GET', '/app/keys')
    assert.ok(!listed.body.includes(secret), 'the list never shows a secret')
    assert.ok(json<{ keys: Array<{ id: string }> }>(listed).keys.some((k) => k.id === key.id))
    const use = (path: string) =>
      harness.app.inject({ method: 'GET', url: path, headers: { authorization: `Bearer ${secret}` } })
    assert.equal((await use('/v1/contacts')).statusCode, 200)
    expectError(await use('/v1/team'), 403, 'forbidden')
    expectError(await owner.request('POST', '/app/keys', { name: 'bad', scopes: ['everything'] }), 400, 'bad_request')
    const { owner: stranger } = await setupOwner()
    expectError(await stranger.request('DELETE', `/app/keys/${key.id}`), 404, 'not_found')
    expectError(await stranger.request('DELETE', `/app/keys/${account.keyId}`), 404, 'not_found')
    const revoked = await owner.request('DELETE', `/app/keys/${key.id}`)
    assert.equal(revoked.statusCode, 200, revoked.body)
    expectError(await use('/v1/contacts'), 401, 'unauthorized')
  })
})

describe('the app routes document', () => {
  test('GET /app/openapi.json describes every /app route and is the committed openapi/app.json; /v1 leaves them out', async () => {
    const response = await harness.app.inject({ method: 'GET', url: '/app/openapi.json' })
    assert.equal(response.statusCode, 200)
    const document = json<{ paths: Record<string, Record<string, unknown>> }>(response)
    for (const path of ['/app/sign-in', '/app/setup', '/app/keys', '/app/team/{id}', '/app/invitations/{token}'])
      assert.ok(document.paths[path], path)
    const { readFileSync } = await import('node:fs')
    const committed = readFileSync(new URL('../../../openapi/app.json', import.meta.url), 'utf8')
    assert.equal(committed, `${JSON.stringify(document, null, 2)}\n`, 'run npm run openapi')
    const v1 = json<{ paths: Record<string, unknown> }>(
      await harness.app.inject({ method: 'GET', url: '/v1/openapi.json' }),
    )
    assert.ok(v1.paths['/v1/team'] || v1.paths['/team'])
    assert.ok(!Object.keys(v1.paths).some((p) => p.includes('/app/')))
  })
})
