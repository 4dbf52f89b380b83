import { Type } from 'typebox'
import { SCOPES } from '../../platform/auth/scopes.ts'
import { paging, Uuid } from '../../platform/tools/common.ts'
import { operationTools } from '../../platform/tools/from-operation.ts'
import { toolsUsing } from '../../platform/tools/tool.ts'
import * as people from './people.app.ts'
import { listTeamMembers, type PeopleServices } from './people.routes.ts'
import { MemberResponse } from './people.schemas.ts'

// The tools need the team:read scope besides the operation's permission.
const tool = operationTools<PeopleServices>({ scope: 'team:read' })
const defineTool = toolsUsing<PeopleServices>()

const byMemberId = {
  rename: { member_id: 'id' },
  describe: { member_id: 'the member’s id (the user id), from list_team_members' },
}
const byKeyId = {
  rename: { key_id: 'id' },
  describe: { key_id: 'the key’s id, from list_api_keys' },
}
const role = { role: 'owner, admin, member or viewer; only an owner makes or changes owners' }
const Scopes = (description: string) =>
  Type.Array(Type.Union(SCOPES.map((s) => Type.Literal(s))), {
    minItems: 1,
    maxItems: SCOPES.length,
    uniqueItems: true,
    description,
  })

export const peopleTools = [
  tool(listTeamMembers, {
    name: 'list_team_members',
    description:
      'The people of this account, oldest membership first: name, e-mail, role (owner, admin, member, viewer), whether they accepted the invitation (active) and when they last used the web app. Read only: the team is managed in the web app.',
    // the tool's paging, as before the operation: an offset of at most 100000
    schemas: paging(200, 50),
  }),
  defineTool({
    name: 'get_team_member',
    title: 'Get a team member',
    description:
      'One person of this account: name, e-mail, role (owner, admin, member, viewer), whether they accepted the invitation (active) and when they last used the web app.',
    scope: 'team:read',
    rest: 'GET /team (one member)',
    output: MemberResponse,
    kind: 'read',
    input: Type.Object({ member_id: Uuid('the member’s id (the user id), from list_team_members') }),
    run: async (ctx, args) => ({ member: await ctx.services.people.getMember(ctx.tenant, args.member_id) }),
  }),
  tool(people.inviteTeamMember, {
    name: 'invite_team_member',
    title: 'Invite a person to the team',
    description:
      'Invite a person by e-mail with a role: they get an invitation link by e-mail and appear as invited until they accept (when no e-mail can be sent, the answer carries invite_url to pass on). Admins invite admins, members and viewers; only owners invite owners. Someone already active here answers already_member.',
    openWorld: true,
    describe: role,
    schemas: { email: Type.String({ minLength: 3, maxLength: 254, format: 'email' }) },
    async preview(ctx, { body }) {
      const { email, role } = body
      ctx.services.people.mayInvite(ctx.tenant, role)
      return {
        action: 'invite a person to this account: an invitation e-mail goes out',
        to: { email: email.trim().toLowerCase(), role },
        recipients: 1,
        account: ctx.tenant.account.name,
      }
    },
  }),
  tool(people.changeTeamMemberRole, {
    name: 'change_team_member_role',
    title: 'Change a team member’s role',
    description:
      'Give a member another role (owner, admin, member, viewer): what they and the assistants they signed in may do changes at once. Admins change admins, members and viewers; only owners touch owners; the last active owner stays owner (409 last_owner).',
    ...byMemberId,
    describe: { ...byMemberId.describe, ...role },
  }),
  tool(people.removeTeamMember, {
    name: 'remove_team_member',
    title: 'Remove a team member',
    description:
      'Remove a person from this account: their sessions here end at once, a pending invitation stops working, and the assistants they signed in lose access; their other accounts stay. Only owners remove owners; the last active owner stays.',
    ...byMemberId,
    idempotent: true,
    preview: async (ctx, { params }) => ({
      action: 'remove a member from this account; their sessions and the assistants they signed in stop working',
      member: await ctx.services.people.getMember(ctx.tenant, params.id),
    }),
  }),
  tool(people.resendInvitation, {
    name: 'resend_invitation',
    title: 'Send an invitation again',
    description:
      'Send a person who has not accepted yet (status invited in list_team_members) a new invitation link by e-mail, valid 7 days, with the role they were invited with; earlier links stop working. When no e-mail can be sent the answer carries invite_url to pass on. An active member is 409 already_member.',
    ...byMemberId,
    openWorld: true,
    async preview(ctx, { params }) {
      const member = await ctx.services.people.pendingInvitation(ctx.tenant, params.id)
      return {
        action: 'send the invitation again: a new link goes out by e-mail, earlier links stop working',
        to: { email: member.email, role: member.role },
        recipients: 1,
      }
    },
  }),
  tool(people.listApiKeys, {
    name: 'list_api_keys',
    title: 'List API keys',
    description:
      'The account’s API keys newest first, revoked ones too: name, prefix (the key’s first characters), scopes, created_at and revoked_at. Never their secrets.',
  }),
  tool(people.getApiKey, {
    name: 'get_api_key',
    title: 'Get an API key',
    description:
      'One API key of the account: name, prefix (its first characters, to recognize it), scopes, created_at and revoked_at. Never its secret.',
    ...byKeyId,
  }),
  tool(people.createApiKey, {
    name: 'create_api_key',
    title: 'Create an API key',
    description:
      'Create an API key with a name and scopes for a program that uses the REST API. The secret is in this answer only (store it now; it cannot be shown again). A key never gets a scope the caller lacks.',
    describe: { name: 'what the key is for' },
    schemas: { scopes: Scopes('the REST scopes the key carries') },
    // an assistant's key never gets a scope the assistant lacks
    run: (ctx, { tenant, body }) => ctx.services.people.createKeyWithin(tenant, body),
  }),
  tool(people.updateApiKey, {
    name: 'update_api_key',
    description:
      'Rename an API key, or take scopes away from it (the program using it loses them at once). A key never gains a scope after it was issued (403 apikey_scope_erweiterung: create a new key instead); a revoked key is 409 key_revoked.',
    ...byKeyId,
    schemas: { scopes: Type.Optional(Scopes('the scopes the key keeps: a subset of its own')) },
  }),
  tool(people.revokeApiKey, {
    name: 'revoke_api_key',
    title: 'Revoke an API key',
    description:
      'Revoke an API key at once, on every process: programs using it get 401 from then on. Cannot be undone (create a new key instead); revoking a revoked key changes nothing.',
    ...byKeyId,
    idempotent: true,
    async preview(ctx, { params }) {
      const key = await ctx.services.people.getKey(ctx.tenant, params.id)
      return {
        action: key.revoked_at
          ? 'nothing: this key is revoked already'
          : 'revoke an API key: every program using it gets 401 from now on',
        key,
      }
    },
  }),
]
