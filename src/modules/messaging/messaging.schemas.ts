import { Type } from 'typebox'

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
          description: 'not with text; template sends are not available yet (400 template_send_unavailable)',
        },
      ),
    ),
  },
  { additionalProperties: false },
)

const errorRef = { $ref: 'Error#' }

/** The error responses of POST /messages beyond the platform's shared ones, each with its codes. */
export const sendErrors = {
  400: {
    description:
      'bad_request: invalid body, or not exactly one of text and template; key template_send_unavailable: template sends are not available yet; idempotency_key_invalid',
    ...errorRef,
  },
  403: {
    description:
      'forbidden (key apikey_scope_fehlt): missing scope; account_blocked; subscription_locked: sending is paused; limit_reached (key message_quota): the monthly message quota is used up',
    ...errorRef,
  },
  404: { description: 'not_found: the contact is missing or belongs to another account', ...errorRef },
  409: {
    description:
      'chat_not_connected: no chat number connected; contact_no_phone: the contact has no phone number; contact_opted_out: the contact opted out; contact_not_optin: chat opt-in not confirmed; idempotency_in_progress (Retry-After: 1)',
    ...errorRef,
  },
  502: {
    description:
      'send_failed: the provider refused the message (key outside_window: outside the 24-hour service window, 131047; opted_out; retry_later; failed), with provider_code and message_id of the stored failed message. Does not guarantee that nothing was sent.',
    ...errorRef,
  },
}
