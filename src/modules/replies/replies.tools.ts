import { idempotencyKey, Uuid } from '../../platform/tools/common.ts'
import { operationTools } from '../../platform/tools/from-operation.ts'
import {
  createSavedReply,
  deleteSavedReply,
  getSavedReply,
  listSavedReplies,
  RenderedReply,
  type RepliesServices,
  renderSavedReply,
  sendSavedReply,
  updateSavedReply,
} from './replies.app.ts'

/** The module services these tools call (the tool server hands them in): send_saved_reply sends as send_message. */
type Services = RepliesServices

const SavedReplyId = Uuid('the saved reply id, from list_saved_replies')
const tool = operationTools<Services>({ id: { name: 'saved_reply_id', schema: SavedReplyId } })
const target = {
  conversation_id: 'the conversation whose contact it is for (or contact_id)',
  contact_id: 'the contact it is for (or conversation_id)',
}

export const repliesTools = [
  tool(listSavedReplies, {
    name: 'list_saved_replies',
    title: 'List saved replies',
    description:
      'The account’s saved replies (short code, title, text with {{variables}}, optional media), by code; q finds a part of the code or the title.',
  }),
  tool(getSavedReply, {
    name: 'get_saved_reply',
    title: 'Get a saved reply',
    description: 'One saved reply: its code, title, text, the variables it uses and its media file.',
  }),
  tool(createSavedReply, {
    name: 'create_saved_reply',
    description:
      'Save a reply the team inserts by typing /code in the inbox. Its text may use {{name}} (first name), {{full_name}}, {{email}}, {{phone}} and the account’s custom field keys, filled from the contact when it is used; any other variable is refused, named. The code (lowercase letters, digits, - and _) is unique per account.',
  }),
  tool(updateSavedReply, {
    name: 'update_saved_reply',
    description: 'Change the code, title, text or media of a saved reply; only the fields given change.',
  }),
  tool(deleteSavedReply, {
    name: 'delete_saved_reply',
    description: 'Delete a saved reply. Messages sent with it stay as they are.',
    async preview(ctx, { params }) {
      const { id, code, title, text } = await ctx.services.replies.get(ctx.tenant, params.id)
      return { action: 'delete a saved reply', saved_reply: { id, code, title, text } }
    },
  }),
  tool(renderSavedReply, {
    name: 'render_saved_reply',
    title: 'A saved reply for a contact',
    description:
      'The text of a saved reply as one contact would get it, its variables filled from the contact (or the conversation’s contact). A variable the contact has no value for is refused (invalid_variables), named. Sends nothing.',
    describe: target,
    kind: 'read',
  }),
  tool(sendSavedReply, {
    name: 'send_saved_reply',
    title: 'Send a saved reply',
    description:
      'Send a saved reply to a contact (or the conversation’s contact), its variables filled from the contact; refused naming the variable when the contact has no value for one, never sent with a gap. Sent as send_message sends free text: the contact’s chat opt-in must be confirmed and the channel delivers it only within 24 hours of the contact’s last message. A saved reply with a media file goes as one media message (image, video or document) with the text as its caption (at most 1024 characters); a file no longer in the media library is refused (saved_reply_media_missing) and nothing is sent.',
    // the reply box's edited text is the web app's
    omit: ['text'],
    describe: target,
    openWorld: true,
    extra: idempotencyKey(
      'printable ASCII without spaces; the same key within 24 hours returns the first result without sending again',
    ),
    async preview(ctx, call) {
      const reply = await ctx.services.replies.render(ctx.tenant, call.params.id, call.body, { sending: true })
      return {
        action: reply.media
          ? `send a saved reply as a chat message with its ${reply.media.kind}`
          : 'send a saved reply as a free-text chat message',
        channel: 'chat',
        recipients: 1,
        to: { contact_id: reply.contact_id },
        text: reply.text,
        ...(reply.media ? { media: reply.media } : {}),
      }
    },
  }),
]

export { RenderedReply }
