import { type TLiteral, type TSchema, Type } from 'typebox'
import { pageFields, paginationQuery } from '../../platform/http/pagination.ts'
import { SendFunnel } from '../../platform/http/statistics.ts'
import { BUTTON_TYPES, CHANNELS, LIMITS, PURPOSES, TEMPLATE_STATES } from './templates.check.ts'

/**
 * One literal per value. Typed as a one-element tuple of the union's literal: Static of an array (not a tuple) of
 * literals is never, which made the templates service's input unusable from the narrow interfaces of its callers.
 */
const literals = <T extends string>(values: readonly T[], description?: string) =>
  Type.Union(values.map((v) => Type.Literal(v)) as [TLiteral<T>], description ? { description } : {})

const Channel = literals(CHANNELS, 'chat (default) or email')
const Purpose = literals(
  PURPOSES,
  'marketing (default), utility or optin_confirm; the provider category is utility for optin_confirm and utility, marketing for marketing',
)
const Nullable = <T extends TSchema>(schema: T, description?: string) =>
  Type.Union([schema, Type.Null()], description ? { description } : {})

const buttonFields = {
  type: literals(BUTTON_TYPES),
  text: Type.String({ minLength: 1, maxLength: LIMITS.buttonText }),
  url: Type.Optional(
    Type.String({
      maxLength: LIMITS.url,
      description:
        'only for type URL, and required there: an https address that may end in one variable, such as https://shop.example/orders/{{order}}',
    }),
  ),
}
const ButtonInput = Type.Object(buttonFields)
export const TemplateButton = Type.Object(buttonFields, { $id: 'TemplateButton', title: 'TemplateButton' })

const mediaId = Type.String({
  maxLength: 40,
  description:
    "a media library file of this account (an image): its public address becomes the url. Another account's id is a 404 (key media_not_found)",
})
const mimeType = Type.Optional(
  Type.String({
    maxLength: 100,
    description: 'image/jpeg or image/png; when omitted the type is read from the address (.jpg, .jpeg, .png)',
  }),
)
const headerMediaFields = {
  media_id: Type.Optional(mediaId),
  url: Type.String({ minLength: 1, maxLength: LIMITS.url, description: 'https address of the header image' }),
  mime_type: mimeType,
}
const headerMediaDescription =
  'the header image of a chat template: a media library file (media_id) or a public https address (url), not both'
const HeaderMediaInput = Type.Object(
  {
    media_id: Type.Optional(mediaId),
    url: Type.Optional(
      Type.String({ minLength: 1, maxLength: LIMITS.url, description: 'https address of the header image' }),
    ),
    mime_type: mimeType,
  },
  { description: headerMediaDescription },
)
export const HeaderMedia = Type.Object(headerMediaFields, {
  $id: 'HeaderMedia',
  title: 'HeaderMedia',
  description: headerMediaDescription,
})

export const TemplateIssue = Type.Object(
  {
    code: Type.String({ description: 'stable reason, such as variables_adjacent or button_text_duplicate' }),
    field: Type.String({ description: 'the field the issue is about: name, content, buttons/1/url, …' }),
    message: Type.String({ description: 'English' }),
  },
  { $id: 'TemplateIssue', title: 'TemplateIssue' },
)

const templateFields = {
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  provider_name: Type.String({
    description:
      'the name the provider knows the template by, derived from name: lower-case, umlauts spelled out (ä → ae), ' +
      'other characters as underscores; with language it identifies the template at the provider',
  }),
  content: Type.String(),
  channel: Channel,
  subject: Nullable(Type.String(), 'email templates only; null for chat'),
  purpose: Purpose,
  provider_category: Nullable(literals(['UTILITY', 'MARKETING'] as const), 'the category submitted; null for email'),
  language: Type.String({ description: 'provider language code such as de or en_US' }),
  buttons: Type.Array(Type.Ref('TemplateButton')),
  confirm_button: Nullable(
    Type.Ref('TemplateButton'),
    'optin_confirm only: the fixed, language-bound confirm button the template is submitted with; null otherwise',
  ),
  header_media: Nullable(Type.Ref('HeaderMedia')),
  state: literals(
    TEMPLATE_STATES,
    'draft until submitted; then the provider decision: pending, approved, rejected, paused, disabled',
  ),
  provider_status: Nullable(
    Type.String(),
    "the provider's status, lower-case (pending, approved, rejected, paused, disabled, …); null until submitted and after any content change",
  ),
  provider_template_id: Nullable(Type.String(), "the provider's id of the template last submitted"),
  rejection_reason: Nullable(Type.String(), "the provider's rejection reason code, such as INVALID_FORMAT"),
  system: Type.Boolean({ description: 'managed by Herold: not sendable, not changed or deleted through the API' }),
  variables: Type.Array(Type.String(), {
    description:
      'the variable names of the content and the URL buttons, in order of first appearance (1, 2, … for positional ones)',
  }),
  settable_variables: Type.Array(Type.String(), {
    description:
      'the variables a caller passes in template.variables of POST /messages: every variable except those that come ' +
      'from the contact: name (first name, or "du"/"there" by language when the contact has none), full_name, email, ' +
      'phone, custom fields, and {{1}} when used as a greeting (the text before its first occurrence, on the first ' +
      'line, is only a greeting word such as Hallo, Hi, Liebe, Dear, ignoring punctuation and emoji)',
  }),
  sendable: Type.Boolean({
    description:
      'true when POST /messages can send it now: approved at the provider, channel chat, neither optin_confirm nor system',
  }),
  submitted_at: Nullable(Type.String({ format: 'date-time' })),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
}

export const Template = Type.Object(templateFields, { $id: 'Template', title: 'Template' })

export const TemplateDetail = Type.Object(
  {
    ...templateFields,
    submittable: Type.Boolean({ description: 'whether POST /templates/{id}/submit makes sense now (issues is empty)' }),
    issues: Type.Array(Type.Ref('TemplateIssue'), {
      description: "why it is not submittable: the provider's published template rules it breaks, or its standing",
    }),
    rejection_reason_text: Nullable(Type.String(), 'English text of rejection_reason; null when not rejected'),
  },
  { $id: 'TemplateDetail', title: 'TemplateDetail' },
)

export const TemplateId = Type.Object({ id: Type.String({ format: 'uuid' }) })

export const ListQuery = Type.Object({
  ...paginationQuery({ maxLimit: 200, defaultLimit: 100, maxOffset: 100000 }),
  channel: Type.Optional(Channel),
  state: Type.Optional(literals(TEMPLATE_STATES)),
  sendable: Type.Optional(Type.Boolean({ description: 'true: only templates POST /messages can send now' })),
})

export const ListResponse = Type.Object({ templates: Type.Array(Type.Ref('Template')), ...pageFields })

const Name = Type.String({ minLength: 1, maxLength: LIMITS.name })
const Content = Type.String({
  minLength: 1,
  maxLength: LIMITS.content,
  description: `variables in double curly braces, named ({{code}}) or positional ({{1}}); a chat template's content may have at most ${LIMITS.chatBody} characters to be submitted`,
})
const Subject = Type.String({ minLength: 1, maxLength: LIMITS.subject, description: 'email templates only' })
const Language = Type.String({
  minLength: 2,
  maxLength: 10,
  pattern: '^[a-z]{2,3}(_[A-Z]{2})?$',
  description: 'provider language code such as de or en_US; default the account language',
})
const Buttons = Type.Array(ButtonInput, { maxItems: 20 })

export const CreateBody = Type.Object({
  name: Name,
  content: Content,
  channel: Type.Optional(Channel),
  subject: Type.Optional(Subject),
  purpose: Type.Optional(Purpose),
  language: Type.Optional(Language),
  buttons: Type.Optional(Buttons),
  header_media: Type.Optional(Nullable(HeaderMediaInput)),
})

export const UpdateBody = Type.Object({
  name: Type.Optional(Name),
  content: Type.Optional(Content),
  subject: Type.Optional(Subject),
  language: Type.Optional(Language),
  buttons: Type.Optional(Buttons),
  header_media: Type.Optional(Nullable(HeaderMediaInput, 'null removes the header image')),
})

export const CreatedResponse = Type.Object({ ok: Type.Boolean(), template: Type.Ref('TemplateDetail') })

export const TemplateResponse = Type.Object({ template: Type.Ref('TemplateDetail') })

export const UpdatedResponse = Type.Object({
  ok: Type.Boolean(),
  template: Type.Ref('TemplateDetail'),
  provider_status_reset: Type.Boolean({
    description: 'true when the change reset provider_status to null and state to draft: submit the template again',
  }),
})

export const DeleteResponse = Type.Object({
  ok: Type.Boolean(),
  deleted: Type.Boolean(),
  removed_at_provider: Type.Boolean({ description: 'the template was known to the provider and removed there' }),
  notice: Nullable(
    Type.String(),
    'why the removal at the provider failed (the local delete happened anyway); else null',
  ),
  hinweis: Nullable(Type.String(), 'deprecated German alias of notice'),
})

export const SubmitResponse = Type.Object({
  ok: Type.Boolean(),
  already: Type.Boolean({
    description: 'true when the template was already pending or approved at the provider: nothing was submitted',
  }),
  notice: Nullable(Type.String(), 'plain-text explanation when already is true; else null'),
  hinweis: Nullable(Type.String(), 'deprecated German alias of notice'),
  template: Type.Ref('TemplateDetail'),
})

const When = Nullable(Type.String({ format: 'date-time' }))

export const PreviewBody = Type.Object({
  contact_id: Type.String({ format: 'uuid', description: 'the contact the texts are rendered for' }),
  variables: Type.Optional(
    Type.Record(Type.String({ maxLength: 60 }), Type.String({ maxLength: 1024 }), {
      maxProperties: 20,
      description: 'values of the variables that do not come from the contact, as POST /messages takes them',
    }),
  ),
})

export const PreviewResponse = Type.Object({
  template_id: Type.String({ format: 'uuid' }),
  contact_id: Type.String({ format: 'uuid' }),
  subject: Nullable(Type.String()),
  text: Nullable(Type.String(), 'the content as the contact would get it; null while a variable has no value'),
  buttons: Type.Array(
    Type.Object(
      { type: Type.String(), text: Type.String(), url: Type.Optional(Type.String()) },
      { additionalProperties: true },
    ),
    { description: 'the buttons; URL button addresses with their variables filled' },
  ),
  header_media: Nullable(
    Type.Object(
      { url: Type.String(), media_id: Type.Optional(Type.String()), mime_type: Type.Optional(Type.String()) },
      { additionalProperties: true },
    ),
  ),
  missing_variables: Type.Array(Type.String(), {
    description: 'variables without a value: contact variables the contact lacks, or settable ones not given',
  }),
  remaining_placeholders: Type.Array(Type.String()),
  sendable: Type.Boolean({ description: 'whether send_template can send this template now' }),
})

export const RefreshResponse = Type.Object({
  changed: Type.Boolean({ description: 'whether the provider reported another status than the one recorded' }),
  previous_status: Nullable(Type.String()),
  template: Type.Ref('TemplateDetail'),
})

export const SendsQuery = Type.Object({
  status: Type.Optional(literals(['queued', 'sending', 'sent', 'delivered', 'read', 'failed', 'skipped'] as const)),
  origin: Type.Optional(literals(['api', 'newsletter', 'followup', 'automation'] as const)),
  ...paginationQuery({ maxLimit: 100, defaultLimit: 25, maxOffset: 100000 }),
})

export const TemplateSend = Type.Object({
  send_id: Type.String({ format: 'uuid' }),
  contact_id: Type.String({ format: 'uuid' }),
  status: Type.String(),
  reason: Nullable(Type.String()),
  reason_detail: Nullable(
    Type.String(),
    'what the reason is about: for field_missing the custom fields the contact has no value for (comma-separated)',
  ),
  origin: Type.String({ description: 'api, newsletter, followup or automation' }),
  origin_id: Nullable(Type.String({ format: 'uuid' }), 'the newsletter, follow-up step or automation run'),
  created_at: Type.String({ format: 'date-time' }),
  sent_at: When,
  delivered_at: When,
  read_at: When,
  failed_at: When,
  skipped_at: When,
})

export const SendsPage = Type.Object({ sends: Type.Array(TemplateSend), ...pageFields })

export const TemplateStatistics = Type.Object({
  template_id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  range: Type.String(),
  since: Nullable(Type.String({ format: 'date-time' }), 'where the range begins; null: all'),
  sends: SendFunnel,
  by_origin: Type.Object(
    { api: Type.Integer(), newsletter: Type.Integer(), followup: Type.Integer(), automation: Type.Integer() },
    { description: 'sends in the range by what sent them' },
  ),
})

export const UsagesResponse = Type.Object({
  template_id: Type.String({ format: 'uuid' }),
  in_use: Type.Boolean({
    description: 'true: DELETE /templates/{id} is refused (409 template_in_use) while it is used',
  }),
  used_by: Type.Array(Type.String(), { description: 'the follow-up steps and automations that send it' }),
})

/** A template as the editor holds it while typing: lax limits, so every draft can be checked. */
export const CheckBody = Type.Object(
  {
    id: Type.Optional(
      Type.String({ format: 'uuid', description: 'the template being edited (its own name is no clash)' }),
    ),
    name: Type.String({ maxLength: 1000 }),
    content: Type.String({ maxLength: 40000 }),
    channel: Type.Optional(literals(CHANNELS)),
    subject: Type.Optional(Type.Union([Type.String({ maxLength: 1000 }), Type.Null()])),
    purpose: Type.Optional(literals(PURPOSES)),
    language: Type.Optional(Type.String({ maxLength: 20, description: 'default the account language' })),
    buttons: Type.Optional(
      Type.Array(
        Type.Object({
          type: literals(BUTTON_TYPES),
          text: Type.String({ maxLength: 200 }),
          url: Type.Optional(Type.Union([Type.String({ maxLength: 4000 }), Type.Null()])),
        }),
        { maxItems: 20 },
      ),
    ),
    header_media: Type.Optional(
      Type.Union([
        Type.Object({
          url: Type.String({ maxLength: 4000 }),
          mime_type: Type.Optional(Type.Union([Type.String({ maxLength: 100 }), Type.Null()])),
        }),
        Type.Null(),
      ]),
    ),
  },
  { additionalProperties: false },
)

export const CheckResponse = Type.Object({
  issues: Type.Array(
    Type.Object({
      code: Type.String({ description: 'stable reason, such as variables_adjacent' }),
      field: Type.String({ description: 'name, content, buttons/1/url, …' }),
      message: Type.String({ description: 'English' }),
    }),
    { description: 'every rule of the deterministic check the draft breaks; empty when it passes' },
  ),
  provider_name: Type.String(),
  variables: Type.Array(Type.String()),
  limits: Type.Object({ chat_body: Type.Integer(), content: Type.Integer(), subject: Type.Integer() }),
})
