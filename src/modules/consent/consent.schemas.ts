import { Type } from 'typebox'
import { SETTINGS_LIMITS } from './consent.rules.ts'

const Keywords = (what: string) =>
  Type.Array(Type.String({ minLength: 1, maxLength: SETTINGS_LIMITS.keyword }), {
    minItems: 1,
    maxItems: SETTINGS_LIMITS.keywords,
    description: `${what}. A keyword matches when it is the whole inbound chat message, trimmed and case-insensitive.`,
  })

export const ConsentSettings = Type.Object(
  {
    start_keywords: Keywords('Keywords that start the chat double opt-in (default START, Anmelden)'),
    stop_keywords: Keywords('Keywords that opt the contact out of chat (default STOP, Abmelden)'),
    stop_confirmation: Type.String({ description: 'the short free text sent after a stop keyword' }),
    landing_consent_text: Type.String({
      description: 'the consent text shown beside the checkbox of the landing page',
    }),
    landing_page_url: Type.String({ description: 'the sign-up page: {app_url}/public/signup/<account id>' }),
    landing_logo: Type.Union(
      [
        Type.Object({
          media_id: Type.String({ format: 'uuid', description: 'the media library file' }),
          url: Type.String({ description: 'its public address, shown above the sign-up form' }),
        }),
        Type.Null(),
      ],
      { description: "the landing page's logo from the media library, or null for none" },
    ),
    optin_confirm_template: Type.Union(
      [
        Type.Object({
          id: Type.String({ format: 'uuid' }),
          name: Type.String({ description: 'the provider name' }),
          language: Type.String(),
        }),
        Type.Null(),
      ],
      {
        description:
          "the approved opt-in confirmation template (purpose optin_confirm) sent after a start keyword or a sign-up, in the contact's language when there is one; null: none is approved, and chat opt-ins stay pending without a confirmation",
      },
    ),
    chat_optins_without_template: Type.Integer({
      description: 'pending chat opt-ins whose confirmation could not be sent because no template was approved',
    }),
    chat_optins_failed: Type.Integer({
      description: 'pending chat opt-ins whose confirmation the provider refused (or no chat number was connected)',
    }),
  },
  { title: 'ConsentSettings' },
)

const Nullable = <T extends ReturnType<typeof Type.String> | ReturnType<typeof Keywords>>(schema: T) =>
  Type.Optional(Type.Union([schema, Type.Null()]))

export const ConsentSettingsBody = Type.Object(
  {
    start_keywords: Nullable(Keywords('Start keywords; null restores the default')),
    stop_keywords: Nullable(Keywords('Stop keywords; null restores the default')),
    stop_confirmation: Nullable(
      Type.String({
        minLength: 1,
        maxLength: SETTINGS_LIMITS.stopConfirmation,
        description: 'null restores the default',
      }),
    ),
    landing_consent_text: Nullable(
      Type.String({
        minLength: 1,
        maxLength: SETTINGS_LIMITS.landingConsentText,
        description: 'null restores the default',
      }),
    ),
    landing_logo: Type.Optional(
      Type.Union(
        [
          Type.Object(
            { media_id: Type.String({ description: "an image of the account's media library" }) },
            { additionalProperties: false },
          ),
          Type.Null(),
        ],
        {
          description:
            "the landing page's logo: an image of the media library (another account's or an unknown id is a 404 media_not_found, a video or PDF a 400 header_media_not_image); null removes it. DELETE /media/{id} is a 409 media_in_use while it is the logo",
        },
      ),
    ),
  },
  { additionalProperties: false },
)
