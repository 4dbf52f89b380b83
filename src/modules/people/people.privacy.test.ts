import assert from 'node:assert/strict'
import { createServer, type Server, type Socket } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { createHarness, createTestAccount, type Harness, json } from '../../../test/helpers/harness.ts'
import { createMember } from './index.ts'

// Issue 51, findings 6 and 7: what the public people routes tell about who has a Herold sign-in.

let counter = 0
const nextEmail = () => `privacy-${process.pid}-${Date.now()}-${++counter}@example.org`
let addresses = 0
const nextIp = () => `10.${process.pid % 250}.${Math.floor(++addresses / 250) + 100}.${addresses % 250}`
const PASSWORD = 'correct horse battery'

/** Whether `promise` settles within `ms` (the answer of a route that must not wait for an e-mail). */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

async function waitFor(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (check()) return true
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return check()
}

describe('password reset: the answer does not depend on whether the address has a sign-in', () => {
  // A mail server that accepts connections and never greets: sending an e-mail through it hangs. A route that sends
  // before answering would hang with it; one that answers first answers at once, and the connection shows later
  // that the mail is on its way.
  let stall: Server
  const sockets: Socket[] = []
  let harness: Harness

  before(async () => {
    stall = createServer((socket) => {
      sockets.push(socket)
      socket.on('error', () => {})
    })
    await new Promise<void>((resolve) => stall.listen(0, '127.0.0.1', resolve))
    const port = (stall.address() as { port: number }).port
    harness = await createHarness({ config: { smtpUrl: `smtp://127.0.0.1:${port}`, mailFrom: 'herold@example.org' } })
  })
  after(async () => {
    for (const socket of sockets) socket.destroy()
    await new Promise<void>((resolve) => stall.close(() => resolve()))
    await harness.close()
  })

  test('a member and an unknown address get the same 202 before any e-mail is sent; only the member’s mail starts', async () => {
    const account = await createTestAccount(harness)
    const member = nextEmail()
    await createMember(harness.database.orm, {
      accountId: account.accountId,
      email: member,
      name: 'Mia Member',
      password: PASSWORD,
      role: 'member',
    })
    const ask = (email: string) =>
      harness.app.inject({ method: 'POST', url: '/app/password-reset', payload: { email }, remoteAddress: nextIp() })

    const unknown = await within(ask(nextEmail()), 5_000)
    assert.notEqual(unknown, 'timeout')
    const known = await within(ask(member), 5_000)
    assert.notEqual(known, 'timeout', 'the answer for a member does not wait for the e-mail')
    if (unknown === 'timeout' || known === 'timeout') return
    assert.equal(known.statusCode, 202)
    assert.equal(unknown.statusCode, 202)
    assert.equal(known.body, unknown.body)
    assert.equal(known.headers['content-type'], unknown.headers['content-type'])

    // the look-up and the e-mail happen after the answer: the member's mail connects to the mail server, once
    assert.ok(await waitFor(() => sockets.length >= 1, 10_000), 'the reset e-mail is being sent')
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal(sockets.length, 1, 'no e-mail for the unknown address')
  })
})

describe('invitations: nothing about users of other accounts', () => {
  let harness: Harness

  before(async () => {
    // no e-mail: the invitation answer hands the link to the inviter, who can open it
    harness = await createHarness({ config: { smtpUrl: undefined } })
  })
  after(async () => {
    await harness.close()
  })

  async function ownerOf() {
    const account = await createTestAccount(harness)
    const email = nextEmail()
    await createMember(harness.database.orm, {
      accountId: account.accountId,
      email,
      name: 'Olga Owner',
      password: PASSWORD,
      role: 'owner',
    })
    const ip = nextIp()
    const signIn = await harness.app.inject({
      method: 'POST',
      url: '/app/sign-in',
      payload: { email, password: PASSWORD },
      remoteAddress: ip,
    })
    assert.equal(signIn.statusCode, 200, signIn.body)
    const headers = {
      cookie: String(signIn.headers['set-cookie']).split(';')[0],
      'x-csrf-token': json(signIn).csrf_token as string,
    }
    return {
      account,
      request: (method: 'GET' | 'POST', url: string, payload?: Record<string, unknown>) =>
        harness.app.inject({ method, url, headers, remoteAddress: ip, ...(payload ? { payload } : {}) }),
    }
  }

  /** The address of Vera Victim, an owner of another account. */
  async function ownerElsewhere(): Promise<string> {
    const elsewhere = await createTestAccount(harness)
    const victim = nextEmail()
    const member = { accountId: elsewhere.accountId, email: victim, name: 'Vera Victim', password: PASSWORD }
    await createMember(harness.database.orm, { ...member, role: 'owner' })
    return victim
  }

  const tokenOf = (response: Parameters<typeof json>[0]) => String(json(response).invite_url).split('/').at(-1) ?? ''

  test('inviting a user of another account answers only what the inviter sent; the team list shows no name', async () => {
    const victim = await ownerElsewhere()
    const inviter = await ownerOf()
    const known = await inviter.request('POST', '/app/team/invitations', { email: victim, role: 'member' })
    const fresh = nextEmail()
    const unknown = await inviter.request('POST', '/app/team/invitations', { email: fresh, role: 'member' })
    assert.equal(known.statusCode, 201, known.body)
    assert.equal(unknown.statusCode, 201, unknown.body)
    assert.doesNotMatch(known.body, /Vera/)
    const member = json<{ member: { name: string; email: string; status: string } }>(known).member
    assert.equal(member.name, '')
    assert.equal(member.email, victim)
    assert.deepEqual(Object.keys(json(known)).sort(), Object.keys(json(unknown)).sort())

    const team = await inviter.request('GET', '/v1/team')
    assert.equal(team.statusCode, 200, team.body)
    assert.doesNotMatch(team.body, /Vera/)

    // the invitation page offers the same to both
    const pageKnown = await harness.app.inject({ method: 'GET', url: `/app/invitations/${tokenOf(known)}` })
    const pageUnknown = await harness.app.inject({ method: 'GET', url: `/app/invitations/${tokenOf(unknown)}` })
    assert.equal(pageKnown.statusCode, 200, pageKnown.body)
    assert.equal(
      pageKnown.body.replace(victim, 'ADDRESS'),
      pageUnknown.body.replace(fresh, 'ADDRESS'),
      'the page does not tell whether the address has a sign-in',
    )
  })

  test('accepting: the same checks for everyone; an existing user proves their password and keeps their name', async () => {
    const victim = await ownerElsewhere()
    const inviter = await ownerOf()
    const known = tokenOf(await inviter.request('POST', '/app/team/invitations', { email: victim, role: 'member' }))
    const unknown = tokenOf(
      await inviter.request('POST', '/app/team/invitations', { email: nextEmail(), role: 'member' }),
    )
    const accept = (token: string, body: Record<string, unknown>) =>
      harness.app.inject({
        method: 'POST',
        url: '/app/invitations/accept',
        payload: { token, ...body },
        remoteAddress: nextIp(),
      })
    // bad input is the same error for both, whatever the address
    for (const body of [{ password: 'another good password' }, { name: 'Mallory', password: 'short' }]) {
      const a = await accept(known, body)
      const b = await accept(unknown, body)
      assert.equal(a.statusCode, 400, a.body)
      assert.equal(a.statusCode, b.statusCode)
      assert.equal(a.body, b.body)
    }
    // someone holding the link without the password cannot take the existing sign-in
    const wrong = await accept(known, { name: 'Mallory', password: 'another good password' })
    assert.equal(wrong.statusCode, 403, wrong.body)
    const right = await accept(known, { name: 'Mallory', password: PASSWORD })
    assert.equal(right.statusCode, 201, right.body)
    assert.equal(json<{ user: { name: string } }>(right).user.name, 'Vera Victim')
  })
})
