import { Type } from 'typebox'
import { SCOPES } from '../../platform/auth/scopes.ts'
import { AppError } from '../../platform/http/errors.ts'
import { paging, Uuid } from '../../platform/tools/common.ts'
import { restRule, type ToolContext, toolsUsing } from '../../platform/tools/tool.ts'
import { pendingInvitation, renewInvitation } from './people.invitations.ts'
import { createKey, getKey, listKeys, revokeKey, updateKey } from './people.keys.ts'
import { invitationMail, type PeopleMailChannels, sendPeopleMail } from './people.mail.ts'
import {
  InviteResponse,
  KeyBody,
  KeyChangeBody,
  KeyCreated,
  KeyResponse,
  KeysResponse,
  MemberResponse,
  TeamPage,
} from './people.schemas.ts'
import { getMember, invite, listMembers, removeMember, setRole } from './people.service.ts'

// these tools call the module's own functions, no module service
const defineTool = toolsUsing<{ channels: PeopleMailChannels }>()

const MemberId = Uuid('the member’s id (the user id), from list_team_members')

const Role = Type.Union(
  [Type.Literal('owner'), Type.Literal('admin'), Type.Literal('member'), Type.Literal('viewer')],
  {
    description: 'owner, admin, member or viewer; only an owner makes or changes owners',
  },
)

const db = (ctx: ToolContext) => ctx.platform.database.orm

const actorRole = (ctx: ToolContext) => {
  const role = ctx.tenant.actor.role
  if (!role) throw new AppError(403, 'forbidden', 'Only a member can manage the team', { key: 'rolle_fehlt' })
  return role
}

export const listTeamMembers = defineTool({
  name: 'list_team_members',
  title: 'List team members',
  description:
    'The people of this account, oldest membership first: name, e-mail, role (owner, admin, member, viewer), whether they accepted the invitation (active) and when they last used the web app. Read only: the team is managed in the web app.',
  scope: 'team:read',
  rest: 'GET /team',
  output: TeamPage,
  kind: 'read',
  input: Type.Object(paging(200, 50)),
  async run(ctx, args) {
    const { items, ...page } = await listMembers(
      ctx.platform.database.orm,
      ctx.tenant.accountId,
      args.limit ?? 50,
      args.offset ?? 0,
    )
    return { members: items, ...page }
  },
})

export const getTeamMember = defineTool({
  name: 'get_team_member',
  title: 'Get a team member',
  description:
    'One person of this account: name, e-mail, role (owner, admin, member, viewer), whether they accepted the invitation (active) and when they last used the web app.',
  scope: 'team:read',
  rest: 'GET /team (one member)',
  output: MemberResponse,
  kind: 'read',
  input: Type.Object({ member_id: MemberId }),
  async run(ctx, args) {
    return { member: await getMember(db(ctx), ctx.tenant.accountId, args.member_id) }
  },
})

export const inviteTeamMember = defineTool({
  name: 'invite_team_member',
  title: 'Invite a person to the team',
  description:
    'Invite a person by e-mail with a role: they get an invitation link by e-mail and appear as invited until they accept (when no e-mail can be sent, the answer carries invite_url to pass on). Admins invite admins, members and viewers; only owners invite owners. Someone already active here answers already_member.',
  scope: 'team:read',
  permission: 'team:manage',
  rest: 'POST /app/team/invitations',
  output: InviteResponse,
  kind: 'write',
  openWorld: true,
  input: Type.Object({ email: Type.String({ minLength: 3, maxLength: 254, format: 'email' }), role: Role }),
  async preview(ctx, args) {
    const role = actorRole(ctx)
    if (role !== 'owner' && args.role === 'owner') {
      throw new AppError(403, 'forbidden', 'Only an owner can change owners', { key: 'rolle_fehlt' })
    }
    return {
      action: 'invite a person to this account: an invitation e-mail goes out',
      to: { email: args.email.trim().toLowerCase(), role: args.role },
      recipients: 1,
      account: ctx.tenant.account.name,
    }
  },
  async run(ctx, args) {
    const { member, token } = await invite(db(ctx), ctx.platform.clock, {
      accountId: ctx.tenant.accountId,
      email: args.email,
      role: args.role,
      actorRole: actorRole(ctx),
    })
    const link = `${ctx.platform.config.publicUrl}/invitations/${token}`
    const language = ctx.tenant.account.language === 'en' ? 'en' : 'de'
    const sent = await sendPeopleMail(ctx.platform, ctx.services.channels, ctx.tenant.accountId, {
      to: member.email,
      ...invitationMail(language, { accountName: ctx.tenant.account.name, link, role: member.role }),
    })
    return { member, email_sent: sent, ...(sent ? {} : { invite_url: link }) }
  },
})

export const changeTeamMemberRole = defineTool({
  name: 'change_team_member_role',
  title: 'Change a team member’s role',
  description:
    'Give a member another role (owner, admin, member, viewer): what they and the assistants they signed in may do changes at once. Admins change admins, members and viewers; only owners touch owners; the last active owner stays owner (409 last_owner).',
  scope: 'team:read',
  permission: 'team:manage',
  rest: 'PATCH /app/team/{id}',
  output: MemberResponse,
  kind: 'write',
  idempotent: true,
  input: Type.Object({ member_id: MemberId, role: Role }),
  async run(ctx, args) {
    return {
      member: await setRole(db(ctx), {
        accountId: ctx.tenant.accountId,
        userId: args.member_id,
        role: args.role,
        actorRole: actorRole(ctx),
      }),
    }
  },
})

export const removeTeamMember = defineTool({
  name: 'remove_team_member',
  title: 'Remove a team member',
  description:
    'Remove a person from this account: their sessions here end at once, a pending invitation stops working, and the assistants they signed in lose access; their other accounts stay. Only owners remove owners; the last active owner stays.',
  scope: 'team:read',
  permission: 'team:manage',
  rest: 'DELETE /app/team/{id}',
  output: MemberResponse,
  kind: 'destructive',
  idempotent: true,
  input: Type.Object({ member_id: MemberId }),
  async preview(ctx, args) {
    const member = await getMember(db(ctx), ctx.tenant.accountId, args.member_id)
    return {
      action: 'remove a member from this account; their sessions and the assistants they signed in stop working',
      member,
    }
  },
  async run(ctx, args) {
    return {
      member: await removeMember(db(ctx), ctx.platform.clock, {
        accountId: ctx.tenant.accountId,
        userId: args.member_id,
        actorRole: actorRole(ctx),
      }),
    }
  },
})

export const resendInvitation = defineTool({
  name: 'resend_invitation',
  title: 'Send an invitation again',
  description:
    'Send a person who has not accepted yet (status invited in list_team_members) a new invitation link by e-mail, valid 7 days, with the role they were invited with; earlier links stop working. When no e-mail can be sent the answer carries invite_url to pass on. An active member is 409 already_member.',
  scope: 'team:read',
  permission: 'team:manage',
  rest: 'POST /app/team/invitations/{id}/resend',
  output: InviteResponse,
  kind: 'write',
  openWorld: true,
  input: Type.Object({ member_id: MemberId }),
  async preview(ctx, args) {
    const member = await pendingInvitation(db(ctx), ctx.tenant.accountId, args.member_id)
    return {
      action: 'send the invitation again: a new link goes out by e-mail, earlier links stop working',
      to: { email: member.email, role: member.role },
      recipients: 1,
    }
  },
  async run(ctx, args) {
    const { member, token } = await renewInvitation(db(ctx), ctx.platform.clock, {
      accountId: ctx.tenant.accountId,
      memberId: args.member_id,
      actorRole: actorRole(ctx),
    })
    const link = `${ctx.platform.config.publicUrl}/invitations/${token}`
    const language = ctx.tenant.account.language === 'en' ? 'en' : 'de'
    const sent = await sendPeopleMail(ctx.platform, ctx.services.channels, ctx.tenant.accountId, {
      to: member.email,
      ...invitationMail(language, { accountName: ctx.tenant.account.name, link, role: member.role }),
    })
    return { member, email_sent: sent, ...(sent ? {} : { invite_url: link }) }
  },
})

export const listApiKeys = defineTool({
  name: 'list_api_keys',
  title: 'List API keys',
  description:
    'The account’s API keys newest first, revoked ones too: name, prefix (the key’s first characters), scopes, created_at and revoked_at. Never their secrets.',
  scope: 'team:read',
  permission: 'keys:manage',
  rest: 'GET /app/keys',
  output: KeysResponse,
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    return { keys: await listKeys(db(ctx), ctx.tenant.accountId) }
  },
})

export const getApiKey = defineTool({
  name: 'get_api_key',
  title: 'Get an API key',
  description:
    'One API key of the account: name, prefix (its first characters, to recognize it), scopes, created_at and revoked_at. Never its secret.',
  scope: 'team:read',
  permission: 'keys:manage',
  rest: 'GET /app/keys/{id}',
  output: KeyResponse,
  kind: 'read',
  input: Type.Object({ key_id: Uuid('the key’s id, from list_api_keys') }),
  async run(ctx, args) {
    return { key: await getKey(db(ctx), ctx.tenant.accountId, args.key_id) }
  },
})

export const createApiKey = defineTool({
  name: 'create_api_key',
  title: 'Create an API key',
  description:
    'Create an API key with a name and scopes for a program that uses the REST API. The secret is in this answer only (store it now; it cannot be shown again). A key never gets a scope the caller lacks.',
  scope: 'team:read',
  permission: 'keys:manage',
  rest: 'POST /app/keys',
  output: KeyCreated,
  kind: 'write',
  input: Type.Object({
    name: Type.String({ minLength: 1, maxLength: 120, description: 'what the key is for' }),
    scopes: Type.Array(Type.Union(SCOPES.map((s) => Type.Literal(s))), {
      minItems: 1,
      maxItems: SCOPES.length,
      uniqueItems: true,
      description: 'the REST scopes the key carries',
    }),
  }),
  async run(ctx, args) {
    const body = restRule(KeyBody, args, 'body')
    const beyond = body.scopes.filter((s) => !(ctx.tenant.actor.scopes as string[]).includes(s))
    if (beyond.length > 0) {
      throw new AppError(403, 'forbidden', `A key cannot get scopes the caller lacks: ${beyond.join(', ')}`, {
        key: 'apikey_scope_fehlt',
      })
    }
    return await createKey(db(ctx), { accountId: ctx.tenant.accountId, name: body.name, scopes: body.scopes })
  },
})

export const updateApiKey = defineTool({
  name: 'update_api_key',
  title: 'Rename an API key or narrow its scopes',
  description:
    'Rename an API key, or take scopes away from it (the program using it loses them at once). A key never gains a scope after it was issued (403 apikey_scope_erweiterung: create a new key instead); a revoked key is 409 key_revoked.',
  scope: 'team:read',
  permission: 'keys:manage',
  rest: 'PATCH /app/keys/{id}',
  output: KeyResponse,
  kind: 'write',
  idempotent: true,
  input: Type.Object({
    key_id: Uuid('the key’s id, from list_api_keys'),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 120 })),
    scopes: Type.Optional(
      Type.Array(Type.Union(SCOPES.map((s) => Type.Literal(s))), {
        minItems: 1,
        maxItems: SCOPES.length,
        uniqueItems: true,
        description: 'the scopes the key keeps: a subset of its own',
      }),
    ),
  }),
  async run(ctx, args) {
    const { key_id: id, ...change } = args
    const body = restRule(KeyChangeBody, change, 'body')
    return { key: await updateKey(db(ctx), ctx.tenant.accountId, id, body) }
  },
})

export const revokeApiKey = defineTool({
  name: 'revoke_api_key',
  title: 'Revoke an API key',
  description:
    'Revoke an API key at once, on every process: programs using it get 401 from then on. Cannot be undone (create a new key instead); revoking a revoked key changes nothing.',
  scope: 'team:read',
  permission: 'keys:manage',
  rest: 'DELETE /app/keys/{id}',
  output: KeyResponse,
  kind: 'destructive',
  idempotent: true,
  input: Type.Object({ key_id: Uuid('the key’s id, from list_api_keys') }),
  async preview(ctx, args) {
    const key = await getKey(db(ctx), ctx.tenant.accountId, args.key_id)
    return {
      action: key.revoked_at
        ? 'nothing: this key is revoked already'
        : 'revoke an API key: every program using it gets 401 from now on',
      key,
    }
  },
  async run(ctx, args) {
    return { key: await revokeKey(db(ctx), ctx.platform.clock, ctx.tenant.accountId, args.key_id) }
  },
})

/** In the order the tool server lists them. */
export const peopleTools = [
  listTeamMembers,
  getTeamMember,
  inviteTeamMember,
  changeTeamMemberRole,
  removeTeamMember,
  resendInvitation,
  listApiKeys,
  getApiKey,
  createApiKey,
  updateApiKey,
  revokeApiKey,
]
