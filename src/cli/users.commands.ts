import { readFileSync } from 'node:fs'
import { loadConfig } from '../config.ts'
import { modules } from '../modules/index.ts'
import {
  createMember,
  getMember,
  invite,
  isRole,
  listMembers,
  removeMember,
  setRole,
  userByEmail,
} from '../modules/people/index.ts'
import { AdminError, getAccount } from '../platform/auth/accounts.service.ts'
import type { Role } from '../platform/auth/people.tables.ts'
import { issueToken, SETUP_TTL_MS } from '../platform/auth/user-tokens.ts'
import { systemClock } from '../platform/clock.ts'
import type { Database } from '../platform/db/client.ts'
import { collectReactions } from '../services.ts'
import { asCommand, type CommandIO, type DataCommand } from './command.ts'

type Values = Record<string, string | boolean | undefined>
type Result = Record<string, unknown>

const str = (values: Values, name: string): string => {
  const value = values[name]
  if (typeof value !== 'string' || value === '') throw new AdminError(`--${name} is required`)
  return value
}

function role(values: Values): Role {
  const value = str(values, 'role')
  if (!isRole(value)) throw new AdminError(`--role must be owner, admin, member or viewer, got "${value}"`)
  return value
}

async function memberId(database: Database, accountId: string, email: string): Promise<string> {
  const user = await userByEmail(database.orm, email)
  if (!user) throw new AdminError(`no user with the e-mail ${email}`)
  await asCommand(() => getMember(database.orm, accountId, user.id))
  return user.id
}

const publicUrl = (io: CommandIO | undefined) => (io?.config ?? loadConfig()).publicUrl

const memberLine = (m: Result) =>
  `${m.id}  ${m.email}  ${m.name || '-'}  role=${m.role}  status=${m.status}  last_active=${m.last_active_at ?? '-'}`

/** herold users …: the people who sign in to the web app. */
export function userCommands(): Record<string, DataCommand> {
  const account = { type: 'string' as const, description: 'account id' }
  const email = { type: 'string' as const, description: "the person's e-mail address" }
  return {
    'users create': {
      usage: '--account ID --email E --role R [--name N --password-stdin]',
      example: 'herold users create --account "$ACCOUNT_ID" --email ada@example.org --role admin --name Ada',
      summary:
        'Add a person to an account: with --password-stdin (the password on standard input) they can sign in at once; without, an invitation link is printed',
      options: {
        account,
        email,
        role: { type: 'string', description: 'owner, admin, member or viewer' },
        name: { type: 'string', description: 'their name (required with --password-stdin)' },
        'password-stdin': { type: 'boolean', description: 'read the password from standard input' },
        password: { type: 'string', description: 'internal: set by --password-stdin' },
      },
      prepare(values) {
        if (values['password-stdin']) values.password = readFileSync(0, 'utf8').replace(/\r?\n$/, '')
      },
      async run(database, values, _positionals, io) {
        const accountId = str(values, 'account')
        await getAccount(database.orm, accountId)
        if (typeof values.password === 'string') {
          const user = await asCommand(() =>
            createMember(database.orm, {
              accountId,
              email: str(values, 'email'),
              name: str(values, 'name'),
              password: values.password as string,
              role: role(values),
            }),
          )
          return { ...(await asCommand(() => getMember(database.orm, accountId, user.id))) }
        }
        const { member, token } = await asCommand(() =>
          invite(database.orm, systemClock, {
            accountId,
            email: str(values, 'email'),
            role: role(values),
            actorRole: 'owner',
          }),
        )
        return { ...member, invite_url: `${publicUrl(io)}/invitations/${token}` }
      },
      human: (r) =>
        r.invite_url
          ? `${memberLine(r)}\n\nInvitation link (valid for 7 days, usable once):\n\n  ${r.invite_url}`
          : memberLine(r),
    },
    'users list': {
      usage: '--account ID',
      example: 'herold users list --account "$ACCOUNT_ID"',
      summary: "List an account's people (invited and active) with their roles",
      options: { account },
      async run(database, values) {
        const accountId = str(values, 'account')
        await getAccount(database.orm, accountId)
        const members: Result[] = []
        for (let offset = 0; ; offset += 200) {
          const page = await listMembers(database.orm, accountId, 200, offset)
          members.push(...page.items.map((m) => ({ ...m })))
          if (!page.has_more) break
        }
        return { members }
      },
      human: (r) =>
        (r.members as Result[]).length ? (r.members as Result[]).map(memberLine).join('\n') : 'no members',
    },
    'users remove': {
      usage: '--account ID --email E',
      example: 'herold users remove --account "$ACCOUNT_ID" --email ada@example.org',
      summary: 'Remove a person from an account; their sessions in it end at once',
      options: { account, email },
      async run(database, values) {
        const accountId = str(values, 'account')
        const userId = await memberId(database, accountId, str(values, 'email'))
        return {
          ...(await asCommand(() =>
            removeMember(
              database.orm,
              systemClock,
              { accountId, userId, actorRole: 'owner' },
              collectReactions(modules).memberLeft,
            ),
          )),
        }
      },
      human: (r) => `removed ${r.email} from the account`,
    },
    'users set-role': {
      usage: '--account ID --email E --role R',
      example: 'herold users set-role --account "$ACCOUNT_ID" --email ada@example.org --role viewer',
      summary: "Change a person's role (it applies to their next request)",
      options: { account, email, role: { type: 'string', description: 'owner, admin, member or viewer' } },
      async run(database, values) {
        const accountId = str(values, 'account')
        const userId = await memberId(database, accountId, str(values, 'email'))
        const next = role(values)
        return {
          ...(await asCommand(() =>
            setRole(
              database.orm,
              { accountId, userId, role: next, actorRole: 'owner' },
              { clock: systemClock, memberLeft: collectReactions(modules).memberLeft },
            ),
          )),
        }
      },
      human: memberLine,
    },
    'users setup-link': {
      usage: '--account ID',
      example: 'herold users setup-link --account "$ACCOUNT_ID"',
      summary: 'Print a new one-time link (7 days) where a person creates an owner of the account',
      options: { account },
      async run(database, values, _positionals, io) {
        const accountId = str(values, 'account')
        await getAccount(database.orm, accountId)
        const token = await issueToken(database.orm, systemClock, { kind: 'setup', ttlMs: SETUP_TTL_MS, accountId })
        return { setup_url: `${publicUrl(io)}/setup/${token}` }
      },
      human: (r) => `Open this one-time link (valid for 7 days) and create the owner:\n\n  ${r.setup_url}`,
    },
  }
}
