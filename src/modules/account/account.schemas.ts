import { Type } from 'typebox'

export const MeResponse = Type.Object({
  account: Type.Object({
    id: Type.String({ format: 'uuid' }),
    name: Type.String({ description: 'suitable as a connection label' }),
  }),
  key: Type.Union([Type.Object({ id: Type.String(), name: Type.String(), prefix: Type.String() }), Type.Null()], {
    description: 'null when called through the tool-server OAuth flow or the web app',
  }),
  auth_type: Type.Union([Type.Literal('api_key'), Type.Literal('oauth'), Type.Literal('session')], {
    description: 'session: the web app, signed in as a member (its scopes follow the role)',
  }),
  scopes: Type.Array(Type.String()),
  rate_limit: Type.Object({ requests_per_minute: Type.Integer() }),
})

export const AccountSettingsBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 120, description: 'the account’s name' })),
    language: Type.Optional(
      Type.String({
        minLength: 2,
        maxLength: 10,
        pattern: '^[a-z]{2,3}(_[A-Z]{2})?$',
        description: 'the default language of new contacts and templates, such as de, en or en_US',
      }),
    ),
    timezone: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: 'IANA timezone such as Europe/Berlin' }),
    ),
    country: Type.Optional(
      Type.Union([Type.String({ minLength: 2, maxLength: 2, pattern: '^[A-Za-z]{2}$' }), Type.Null()], {
        description:
          'ISO 3166-1 alpha-2 country national phone numbers are read in (imports, the contact form), such as DE; null: the time zone’s',
      }),
    ),
  },
  { additionalProperties: false },
)

export const AccountSettings = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    plan: Type.String(),
    language: Type.String(),
    timezone: Type.String(),
    country: Type.Union([Type.String(), Type.Null()], {
      description: 'the country national phone numbers are read in: the one set, else the time zone’s (null: none)',
    }),
    country_set: Type.Boolean({ description: 'false: the country follows the time zone' }),
    sending_paused: Type.Boolean(),
    created_at: Type.String({ format: 'date-time' }),
  },
  { title: 'AccountSettings' },
)

const Quota = (what: string) =>
  Type.Object({
    used: Type.Integer({ description: `${what} used` }),
    limit: Type.Integer({ description: 'the plan’s limit' }),
    left: Type.Integer({ description: 'what is left (never below 0)' }),
  })

export const Usage = Type.Object(
  {
    plan: Type.String(),
    month: Type.String({ description: 'the calendar month (YYYY-MM) in the account’s timezone' }),
    messages: Quota('messages this month'),
    contacts: Quota('contacts'),
    webhook_subscriptions: Quota('webhook subscriptions'),
    requests_per_minute: Type.Integer({ description: 'the API rate limit per credential' }),
  },
  { title: 'Usage' },
)

/** What a new account does first, each step done or not from what the account holds. */
export const FirstSteps = Type.Object(
  {
    connect_number: Type.Boolean({ description: 'a chat number is connected' }),
    optin_template: Type.Boolean({ description: 'an optin_confirm template is approved' }),
    import_contacts: Type.Boolean({ description: 'the account holds at least one contact' }),
    invite_team: Type.Boolean({ description: 'someone besides the first member is a member or invited' }),
  },
  { title: 'FirstSteps' },
)
