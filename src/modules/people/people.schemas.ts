import { Type } from 'typebox'
import { pageSchema, paginationQuery } from '../../platform/http/pagination.ts'

export const RoleSchema = Type.Union(
  [Type.Literal('owner'), Type.Literal('admin'), Type.Literal('member'), Type.Literal('viewer')],
  { description: 'owner, admin, member or viewer (docs/people.md: what each may do)' },
)

export const Member = Type.Object({
  id: Type.String({ format: 'uuid', description: 'the user' }),
  name: Type.String({ description: 'empty until an invited person accepts' }),
  email: Type.String(),
  role: RoleSchema,
  status: Type.Union([Type.Literal('invited'), Type.Literal('active')]),
  last_active_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'the last time the member used the web app in this account',
  }),
  created_at: Type.String({ format: 'date-time' }),
})

export const TeamQuery = Type.Object(paginationQuery({ maxLimit: 200, defaultLimit: 50 }))
export const TeamPage = pageSchema('members', Member)

const Email = Type.String({ minLength: 3, maxLength: 254 })
const Password = Type.String({ minLength: 1, maxLength: 200 })
const Token = Type.String({ minLength: 1, maxLength: 200 })

export const SignInBody = Type.Object({ email: Email, password: Password })
export const SetupBody = Type.Object({
  token: Token,
  name: Type.String({ minLength: 1, maxLength: 120 }),
  email: Email,
  password: Password,
})
export const TokenParams = Type.Object({ token: Token })
export const AcceptBody = Type.Object({
  token: Token,
  name: Type.Optional(Type.String({ maxLength: 120 })),
  password: Password,
})
export const ResetRequestBody = Type.Object({ email: Email })
export const ResetCompleteBody = Type.Object({ token: Token, password: Password })
export const PasswordBody = Type.Object({ current_password: Password, new_password: Password })
export const KeyBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 120 }),
  scopes: Type.Array(Type.String(), { minItems: 1, maxItems: 64 }),
})
export const KeyChangeBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 120 })),
    scopes: Type.Optional(
      Type.Array(Type.String({ maxLength: 40 }), {
        minItems: 1,
        maxItems: 64,
        description: 'the key’s new scopes: only fewer than it has, never more',
      }),
    ),
  },
  { additionalProperties: false },
)
export const IdParams = Type.Object({ id: Type.String({ format: 'uuid' }) })
export const InviteBody = Type.Object({ email: Email, role: RoleSchema })
export const RoleBody = Type.Object({ role: RoleSchema })
export const LanguageBody = Type.Object({ language: Type.Union([Type.Literal('de'), Type.Literal('en')]) })

export const SessionResponse = Type.Object({
  user: Type.Object({
    id: Type.String(),
    email: Type.String(),
    name: Type.String(),
    language: Type.Union([Type.Literal('de'), Type.Literal('en')]),
  }),
  account: Type.Object({
    id: Type.String(),
    name: Type.String(),
    language: Type.String(),
    timezone: Type.String({ description: "the account's IANA timezone (schedules are shown in it)" }),
  }),
  role: RoleSchema,
  scopes: Type.Array(Type.String()),
  permissions: Type.Array(Type.String()),
  csrf_token: Type.String({ description: 'send it as X-CSRF-Token on every POST, PUT, PATCH and DELETE' }),
})

export const KeyView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String(),
  scopes: Type.Array(Type.String()),
  created_at: Type.String({ format: 'date-time' }),
  revoked_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
})

export const SetupLinkResponse = Type.Object({
  valid: Type.Boolean(),
  account: Type.Object({ name: Type.String(), language: Type.String() }),
})
export const InvitationResponse = Type.Object({
  email: Type.String(),
  role: RoleSchema,
  account_id: Type.String(),
  account_name: Type.String(),
  needs_password: Type.Boolean({
    description:
      'always true: the page does not tell whether the address has a Herold sign-in. Everyone gives a name and a password; a person who has a password already gives that one (their name stays).',
  }),
})
export const KeysResponse = Type.Object({ keys: Type.Array(KeyView) })
export const KeyCreated = Type.Object({
  key: KeyView,
  secret: Type.String({ description: 'the API key itself: shown in this answer only' }),
})
export const KeyResponse = Type.Object({ key: KeyView })
export const MemberResponse = Type.Object({ member: Member })
export const InviteResponse = Type.Object({
  member: Member,
  email_sent: Type.Boolean(),
  invite_url: Type.Optional(Type.String({ description: 'only when no e-mail could be sent' })),
})
export const Accepted = Type.Object({ accepted: Type.Boolean() })
