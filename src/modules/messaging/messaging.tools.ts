import { Type } from 'typebox'
import { ContactId, idempotencyKey, Uuid } from '../../platform/tools/common.ts'
import { operationTools } from '../../platform/tools/from-operation.ts'
import { obj } from '../../platform/tools/outputs.ts'
import { operationRule, type ToolContext } from '../../platform/tools/tool.ts'
import type { ContactsService } from '../contacts/index.ts'
import { Message } from '../inbox/index.ts'
import type { TemplatesService } from '../templates/index.ts'
import {
  getSend,
  getSendingSettingsOperation,
  isQueued,
  type MessagingServices,
  sendMessage,
  updateSendingSettingsOperation,
} from './messaging.routes.ts'
import { SendBody } from './messaging.schemas.ts'

/** The module services these tools call (the tool server hands them in). */
interface Services extends MessagingServices {
  templates: TemplatesService
  contacts: ContactsService
}

// send_message and send_template stand for POST /messages, one with text, the other with a template; get_send_status
// for GET /sends/{id}. The spec's idempotency_key is the operation's Idempotency-Key.
const tool = operationTools<Services>()
const sendOnce = idempotencyKey(
  'printable ASCII without spaces; the same key within 24 hours returns the first result without sending again',
)

async function contactPreview(ctx: ToolContext<Services>, contactId: string) {
  const contact = await ctx.services.contacts.get(ctx.tenant, contactId)
  return { contact_id: contact.id, name: contact.name, phone: contact.phone, optin_chat: contact.optin_chat }
}

type SendCall = Parameters<typeof sendMessage.handle>[1]

/** POST /messages' call with the template the tool's template_id and variables name, checked by its rule. */
function withTemplate(call: SendCall, { template_id, variables }: Record<string, unknown>): SendCall {
  return { ...call, body: operationRule(SendBody, { ...call.body, template: { id: template_id, variables } }, 'body') }
}

export const messagingTools = [
  tool(sendMessage, {
    name: 'send_message',
    title: 'Send a chat message',
    description:
      'Send a free-text WhatsApp message to a contact whose chat opt-in is confirmed. The channel only delivers free text within 24 hours of the contact’s last message (otherwise send_failed); use send_template outside that window.',
    pick: ['contact_id', 'text'],
    schemas: { contact_id: ContactId },
    required: ['text'],
    describe: { text: 'the message text' },
    extra: sendOnce,
    output: obj(
      {
        sent: Type.Boolean({ description: 'true: the message went out (message); false: it was queued (send_id)' }),
        message: Type.Optional(Message),
        send_id: Type.Optional(Type.String({ format: 'uuid' })),
        status: Type.Optional(Type.String()),
      },
      'POST /messages: the sent message (201), or the queued send (202)',
    ),
    openWorld: true,
    async preview(ctx, { body }) {
      const { contact_id, text } = body
      const to = await contactPreview(ctx, contact_id)
      return { action: 'send a free-text chat message', channel: 'chat', recipients: 1, to, text }
    },
    async run(ctx, call) {
      const answer = await sendMessage.handle(ctx.services, call)
      return isQueued(answer) ? { sent: false, ...answer } : { sent: true, message: answer }
    },
  }),
  tool(sendMessage, {
    name: 'send_template',
    title: 'Send an approved template',
    description:
      'Queue an approved chat template to a contact whose chat opt-in is confirmed; works at any time. Variables that come from the contact (name, full_name, email, phone and the account’s custom fields) are filled in; give values for the others (a contact without a value for a custom field the template uses, and no default, is refused naming it). The result has a send_id: read its status with get_send_status.',
    pick: ['contact_id'],
    schemas: { contact_id: ContactId },
    extra: {
      template_id: Uuid('the template id, from list_templates (sendable true)'),
      // the spec's limits of the tool (POST /messages leaves them to the template check)
      variables: Type.Optional(
        Type.Record(Type.String({ maxLength: 100 }), Type.String({ maxLength: 1024 }), {
          maxProperties: 20,
          description: 'values of the variables that do not come from the contact (at most 20)',
        }),
      ),
      ...sendOnce,
    },
    output: obj(
      {
        queued: Type.Boolean({ description: 'true: queued with send_id (read it with get_send_status)' }),
        send_id: Type.Optional(Type.String({ format: 'uuid' })),
        status: Type.Optional(Type.String()),
        message: Type.Optional(Message),
      },
      'POST /messages with a template: the queued send (202)',
    ),
    openWorld: true,
    async preview(ctx, call, extra) {
      const { body } = withTemplate(call, extra)
      const to = await contactPreview(ctx, body.contact_id)
      const template = await ctx.services.templates.get(ctx.tenant, extra.template_id as string)
      return {
        action: 'queue a template message',
        channel: 'chat',
        recipients: 1,
        to,
        template: { id: template.id, name: template.name, language: template.language, content: template.content },
        variables: body.template?.variables ?? {},
      }
    },
    async run(ctx, call, extra) {
      const answer = await sendMessage.handle(ctx.services, withTemplate(call, extra))
      return isQueued(answer) ? { queued: true, ...answer } : { queued: false, message: answer }
    },
  }),
  tool(getSend, {
    name: 'get_send_status',
    title: 'Status of a template send',
    description:
      'The status of a template send made by send_template: queued, sent, delivered, read, failed or skipped (with reason).',
    // the spec's tool takes a uuid (REST answers 404 for any other id)
    id: { name: 'send_id', schema: Uuid('the send_id answered by send_template') },
  }),
  tool(getSendingSettingsOperation, {
    name: 'get_sending_settings',
    description:
      'The frequency cap (at most max_messages marketing messages per contact in window_hours, across newsletters, follow-ups and automations) and the quiet hours (from–to in the contact’s time zone, when marketing sends wait).',
  }),
  tool(updateSendingSettingsOperation, {
    name: 'update_sending_settings',
    description:
      'Change the frequency cap or the quiet hours; only given fields change. Applies to every marketing send of newsletters, follow-ups and automations checked from now on; utility and opt-in messages and POST /messages sends are never capped or held.',
  }),
]
