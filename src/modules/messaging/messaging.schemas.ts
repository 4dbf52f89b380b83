import { Type } from 'typebox'
import type { ErrorStatus } from '../../platform/http/errors.ts'

export const SendBody = Type.Object(
  {
    contact_id: Type.String({ format: 'uuid' }),
    text: Type.Optional(Type.String({ minLength: 1, maxLength: 4000, description: 'free text; not with template' })),
    template: Type.Optional(
      Type.Object(
        {
          id: Type.String({ format: 'uuid', description: 'id from the template list' }),
          variables: Type.Optional(
            Type.Record(Type.String(), Type.String(), {
              description: 'values for variables that do not come from the contact',
            }),
          ),
        },
        {
          additionalProperties: false,
          description:
            'not with text; an approved chat template of this account, sent at any time (also outside the 24-hour window)',
        },
      ),
    ),
  },
  { additionalProperties: false },
)

/** The error responses of POST /messages beyond the platform's shared ones, each with its codes. */
export const sendErrors: Partial<Record<ErrorStatus, string>> = {
  400: 'bad_request: not exactly one of text and template',
  403: 'subscription_locked: sending is paused; limit_reached (key message_quota): the monthly message quota is used up',
  404: 'not_found: the contact or the template is missing or belongs to another account',
  409: 'chat_not_connected: no chat number connected; contact_no_phone: the contact has no phone number; contact_opted_out: the contact opted out; contact_not_optin: chat opt-in not confirmed',
  422: 'template_not_chat: the template is an e-mail template; template_not_sendable: opt-in confirmation or system template; template_not_approved: provider status not approved; invalid_variables: the message names each variable, and `variables` lists {name, problem} (problems: unknown, from_contact, missing, not_a_string, empty, too_long, line_break, tab, control_character, four_spaces, placeholder, no_value: a contact variable the contact has no value for)',
  502: 'send_failed (free text only): the provider refused the message (key outside_window: outside the 24-hour service window, 131047; opted_out; retry_later; failed), with provider_code and message_id of the stored failed message. Does not guarantee that nothing was sent.',
}

export const SendQueued = Type.Object(
  {
    send_id: Type.String({ format: 'uuid', description: 'read the result with GET /sends/{id}' }),
    status: Type.Literal('queued'),
  },
  { description: 'the template send is checked and queued' },
)

const at = (description: string) => Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description })

export const SEND_REASONS =
  'skipped: account_blocked, subscription_locked, contact_deleted, contact_no_phone, contact_opted_out, contact_not_optin, template_deleted, template_not_chat, template_not_sendable, template_not_approved, chat_not_connected, field_missing (a custom field the template uses has no value for the contact and no default; reason_detail names it), placeholder_remains (nothing is sent while a placeholder would remain, such as {{email}} for a contact without e-mail; reason_detail names it), limit_reached (the monthly quota, reserved right before the send), frequency_capped (the contact had as many marketing messages of newsletters, follow-ups and automations in the account’s window as GET /settings/sending allows), late (a campaign send that waited longer than it may), provider_unreachable; queued while a campaign send waits: subscription_locked, account_blocked, chat_not_connected, daily_limit_reached, quiet_hours (the contact’s quiet hours; reason_detail is when they end); failed: provider_refused (error_code is the provider code), contact_opted_out (the provider reports an opt-out, 131050), rate_limited (throughput refusals kept on after retries), provider_failed (a failed status after sending), interrupted (the worker stopped during the provider call: the send is never repeated, since it may have gone out), provider_error (the provider call broke off; it may have gone out)'

export const SendRecord = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    send_id: Type.String({ format: 'uuid', description: 'same as id' }),
    status: Type.Union(
      ['queued', 'sent', 'delivered', 'read', 'failed', 'skipped'].map((s) => Type.Literal(s)),
      { description: 'moves forward only: queued → sent → delivered → read; failed or skipped end it' },
    ),
    reason: Type.Union([Type.String(), Type.Null()], { description: `why it was skipped or failed. ${SEND_REASONS}` }),
    grund: Type.Union([Type.String(), Type.Null()], { description: 'deprecated German alias of reason' }),
    reason_detail: Type.Union([Type.String(), Type.Null()], {
      description:
        'what the reason is about: for field_missing the custom fields, for placeholder_remains the variables without a value (comma-separated); null otherwise',
    }),
    error_code: Type.Union([Type.String(), Type.Null()], { description: "the provider's error code" }),
    contact_id: Type.String({ format: 'uuid' }),
    template_id: Type.String({ format: 'uuid' }),
    message_id: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], {
      description: 'the outbound message in the inbox, once sent (or refused by the provider)',
    }),
    created_at: Type.String({ format: 'date-time', description: 'queued at' }),
    sent_at: at('handed to the provider'),
    delivered_at: at('reported delivered (or read)'),
    read_at: at('reported read'),
    failed_at: at('failed'),
    skipped_at: at('skipped'),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { description: 'a template send record' },
)

export const SendId = Type.Object({ id: Type.String({ description: 'the send_id of POST /messages' }) })

const QuietTime = (what: string) =>
  Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$', description: `${what}, HH:MM (00:00–23:59)` })

/** GET/PATCH /settings/sending: the frequency cap and quiet hours (docs/sending.md). */
export const SendingSettings = Type.Object(
  {
    frequency_cap: Type.Object({
      enabled: Type.Boolean({
        description:
          'whether a contact gets at most max_messages marketing messages of newsletters, follow-ups and automations in any window of window_hours; a capped send is skipped with reason frequency_capped',
      }),
      max_messages: Type.Integer({ minimum: 1, maximum: 100 }),
      window_hours: Type.Integer({ minimum: 1, maximum: 720, description: 'the rolling window, in hours' }),
    }),
    quiet_hours: Type.Object({
      enabled: Type.Boolean({
        description:
          'whether marketing messages of newsletters, follow-ups and automations wait while it is between from and to for the contact (their custom field timezone, else their phone number’s country, else the account’s timezone); the send stays queued with reason quiet_hours',
      }),
      from: QuietTime('when the quiet hours begin, local time of the contact'),
      to: QuietTime('when they end; earlier than from: over midnight'),
    }),
  },
  { title: 'SendingSettings' },
)

export const SendingSettingsBody = Type.Object(
  {
    frequency_cap: Type.Optional(
      Type.Object(
        {
          enabled: Type.Optional(Type.Boolean()),
          max_messages: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
          window_hours: Type.Optional(Type.Integer({ minimum: 1, maximum: 720 })),
        },
        { additionalProperties: false, minProperties: 1 },
      ),
    ),
    quiet_hours: Type.Optional(
      Type.Object(
        {
          enabled: Type.Optional(Type.Boolean()),
          from: Type.Optional(QuietTime('when the quiet hours begin')),
          to: Type.Optional(QuietTime('when they end')),
        },
        { additionalProperties: false, minProperties: 1 },
      ),
    ),
  },
  { additionalProperties: false, minProperties: 1, title: 'SendingSettingsBody' },
)
