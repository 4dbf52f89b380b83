import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import { Message } from '../inbox/index.ts'
import type { MessagingService } from '../messaging/index.ts'
import type { RepliesService } from './replies.service.ts'

/**
 * The web app's saved replies under /app (the tool server has them too, replies.tools.ts): list, one, create,
 * change, delete, the text rendered for one contact (what the reply box inserts), and the reply sent with its file.
 */

/** The services the saved replies' operations call: a saved reply is sent through messaging's free-text path. */
export interface RepliesServices {
  replies: RepliesService
  messaging: Pick<MessagingService, 'send'>
}

const tags = ['app']
const operation = operationsUsing<RepliesServices>()
const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T, description?: string) =>
  Type.Union([schema, Type.Null()], description ? { description } : {})

const Code = Type.String({
  pattern: '^/?[a-z0-9_-]{1,32}$',
  maxLength: 33,
  description: 'the short code typed after a slash in the reply box: lowercase letters, digits, - and _ (1–32)',
})
const Title = Type.String({ minLength: 1, maxLength: 100 })
const Text = Type.String({
  minLength: 1,
  maxLength: 4096,
  description:
    'the reply; {{name}} (first name), {{full_name}}, {{email}}, {{phone}} and {{<custom field key>}} are filled from the contact',
})
const MediaId = Type.String({ format: 'uuid', description: 'a file of the account’s media library' })
const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) })

export const SavedReplyMedia = Type.Object(
  {
    media_id: Type.String({ format: 'uuid' }),
    url: Type.String(),
    mime_type: Type.String(),
    kind: Type.String({ description: 'image, video or document' }),
    filename: nullable(Type.String()),
  },
  { title: 'SavedReplyMedia' },
)

export const SavedReply = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    code: Type.String({ description: 'without the slash' }),
    title: Type.String(),
    text: Type.String(),
    variables: Type.Array(Type.String(), { description: 'the variables of the text, in order of first appearance' }),
    media: nullable(SavedReplyMedia),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { title: 'SavedReply' },
)

export const listSavedReplies = operation({
  method: 'GET',
  path: '/saved-replies',
  mount: 'app',
  scope: 'inbox:read',
  operationId: 'listSavedReplies',
  summary: 'The account’s saved replies',
  description: 'Needs inbox:read. By code; q finds a part of the code (with or without the slash) or of the title.',
  tags,
  query: Type.Object(
    { q: Type.Optional(Type.String({ maxLength: 100, description: 'a part of the code or the title' })) },
    { additionalProperties: false },
  ),
  response: Type.Object({ saved_replies: Type.Array(SavedReply) }),
  handle: ({ replies }, { tenant, query }) => replies.list(tenant, query),
})

export const getSavedReply = operation({
  method: 'GET',
  path: '/saved-replies/{id}',
  mount: 'app',
  scope: 'inbox:read',
  operationId: 'getSavedReply',
  summary: 'One saved reply',
  description: 'Needs inbox:read.',
  tags,
  params: IdParams,
  response: SavedReply,
  handle: ({ replies }, { tenant, params }) => replies.get(tenant, params.id),
})

export const createSavedReply = operation({
  method: 'POST',
  path: '/saved-replies',
  mount: 'app',
  scope: 'messages:write',
  operationId: 'createSavedReply',
  summary: 'Save a reply',
  description:
    'Needs messages:write. 409 saved_reply_code_taken: another saved reply of the account has the code (taken_code); 409 saved_reply_limit_reached: the account has 500. 400 saved_reply_unknown_variable: a variable no contact can fill (not name, full_name, email, phone or a custom field key), each named in variables. 404 media_not_found: media_id is no file of the account’s media library.',
  tags,
  body: Type.Object(
    { code: Code, title: Title, text: Text, media_id: Type.Optional(nullable(MediaId)) },
    { additionalProperties: false },
  ),
  status: 201,
  response: SavedReply,
  handle: ({ replies }, { tenant, body }) => replies.create(tenant, body),
})

export const updateSavedReply = operation({
  method: 'PATCH',
  path: '/saved-replies/{id}',
  mount: 'app',
  scope: 'messages:write',
  operationId: 'updateSavedReply',
  summary: 'Change a saved reply',
  description:
    'Needs messages:write. Only the fields given change; media_id null removes the file. 409 saved_reply_code_taken, 400 saved_reply_unknown_variable and 404 media_not_found as for POST.',
  tags,
  params: IdParams,
  body: Type.Object(
    {
      code: Type.Optional(Code),
      title: Type.Optional(Title),
      text: Type.Optional(Text),
      media_id: Type.Optional(nullable(MediaId)),
    },
    { additionalProperties: false },
  ),
  response: SavedReply,
  handle: ({ replies }, { tenant, params, body }) => replies.update(tenant, params.id, body),
})

export const deleteSavedReply = operation({
  method: 'DELETE',
  path: '/saved-replies/{id}',
  mount: 'app',
  scope: 'messages:write',
  operationId: 'deleteSavedReply',
  summary: 'Delete a saved reply',
  description: 'Needs messages:write. Messages sent with it stay as they are.',
  tags,
  params: IdParams,
  response: Type.Object({ id: Type.String({ format: 'uuid' }), deleted: Type.Literal(true) }),
  handle: ({ replies }, { tenant, params }) => replies.remove(tenant, params.id),
})

export const RenderBody = Type.Object(
  {
    conversation_id: Type.Optional(Type.String({ format: 'uuid', description: 'for this conversation’s contact' })),
    contact_id: Type.Optional(Type.String({ format: 'uuid', description: 'for this contact' })),
  },
  { additionalProperties: false, description: 'exactly one of conversation_id and contact_id' },
)

export const RenderedReply = Type.Object(
  {
    saved_reply_id: Type.String({ format: 'uuid' }),
    contact_id: Type.String({ format: 'uuid' }),
    text: Type.String({ description: 'the text with every variable filled' }),
    media: nullable(SavedReplyMedia),
  },
  { title: 'RenderedSavedReply' },
)

export const renderSavedReply = operation({
  method: 'POST',
  path: '/saved-replies/{id}/render',
  mount: 'app',
  scope: 'inbox:read',
  operationId: 'renderSavedReply',
  summary: 'A saved reply’s text for one contact',
  description:
    'Needs inbox:read. Nothing is sent. The variables are filled from the contact as a template’s are: name is the first name (the language’s fallback without a name), custom fields their value or default in the contact’s language. A variable the contact has no value for is 422 invalid_variables naming it in variables; the text is never given with an empty value. 400 conversation_or_contact: not exactly one of conversation_id and contact_id; 404 for another account’s saved reply, conversation or contact.',
  tags,
  params: IdParams,
  body: RenderBody,
  response: RenderedReply,
  handle: ({ replies }, { tenant, params, body }) => replies.render(tenant, params.id, body),
})

export const SendBody = Type.Object(
  {
    ...RenderBody.properties,
    text: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 4000,
        description:
          'the text to send instead of the rendered one (the reply box’s text after editing); at most 1024 characters when the reply has a file',
      }),
    ),
  },
  { additionalProperties: false, description: 'exactly one of conversation_id and contact_id' },
)

export const SentReply = Type.Object(
  {
    sent: Type.Boolean({ description: 'true: the message went out' }),
    message: Message,
    text: Type.String({ description: 'the text sent (the caption of the file when there is one)' }),
    media: nullable(SavedReplyMedia, 'the file sent with the text; null when the reply has none'),
  },
  { title: 'SentSavedReply' },
)

/**
 * A saved reply sent to one contact: its text rendered for the contact (or the given text) and its media file in
 * one media message with the text as caption, else as free text; checked and counted as POST /messages' free text.
 * A file no longer in the media library is 409 saved_reply_media_missing and nothing is sent.
 */
export async function sendSavedReplyTo(
  { replies, messaging }: RepliesServices,
  tenant: Pick<TenantContext, 'accountId' | 'account'>,
  id: string,
  body: { conversation_id?: string; contact_id?: string; text?: string },
) {
  const { text: given, ...target } = body
  const reply = await replies.render(tenant, id, target, { sending: true })
  const text = given ?? reply.text
  const media = reply.media
  const { sent } = await messaging.send(tenant, {
    contact_id: reply.contact_id,
    text,
    ...(media ? { media: { url: media.url, mime: media.mime_type, filename: media.filename } } : {}),
  })
  return { sent: true, message: sent as Record<string, unknown>, text, media }
}

export const sendSavedReply = operation({
  method: 'POST',
  path: '/saved-replies/{id}/send',
  mount: 'app',
  scope: 'messages:write',
  operationId: 'sendSavedReply',
  summary: 'Send a saved reply with its file',
  description:
    'Needs messages:write. The reply’s text rendered for the contact (as render does; text replaces it) is sent as POST /messages sends free text: same checks and errors, within the 24-hour window. A reply with a media file goes as one media message (image, video or document) with the text as its caption (400 caption_too_long over 1024 characters); the stored message keeps media_url and media_mime. 409 saved_reply_media_missing (key media_not_found): the file is no longer in the media library, nothing is sent. 422 invalid_variables, 400 conversation_or_contact and 404 as for render.',
  tags,
  params: IdParams,
  body: SendBody,
  status: 201,
  response: SentReply,
  handle: (services, { tenant, params, body }) => sendSavedReplyTo(services, tenant, params.id, body),
})

export const repliesOperations = [
  listSavedReplies,
  getSavedReply,
  createSavedReply,
  updateSavedReply,
  deleteSavedReply,
  renderSavedReply,
  sendSavedReply,
]

export function repliesAppRoutes(services: RepliesServices) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, services, repliesOperations)
  }
}
