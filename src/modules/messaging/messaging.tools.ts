import type { Static } from 'typebox'
import { Type } from 'typebox'
import { ContactId, Uuid } from '../../platform/tools/common.ts'
import { operationTools } from '../../platform/tools/from-operation.ts'
import { obj } from '../../platform/tools/outputs.ts'
import { restRule, type ToolContext, toolsUsing } from '../../platform/tools/tool.ts'
import type { ContactsService } from '../contacts/index.ts'
import { Message } from '../inbox/index.ts'
import type { TemplatesService } from '../templates/index.ts'
import { getSend, type MessagingServices } from './messaging.routes.ts'
import { SendBody } from './messaging.schemas.ts'

/** The module services these tools call (the tool server hands them in). */
interface Services extends MessagingServices {
  templates: TemplatesService
  contacts: ContactsService
}

const defineTool = toolsUsing<Services>()
const tool = operationTools<Services>()

const IdempotencyKey = Type.String({
  minLength: 1,
  maxLength: 255,
  pattern: '^[\\x21-\\x7e]+$',
  description:
    'printable ASCII without spaces; the same key within 24 hours returns the first result without sending again',
})

async function contactPreview(ctx: ToolContext<Services>, contactId: string) {
  const contact = await ctx.services.contacts.get(ctx.tenant, contactId)
  return { contact_id: contact.id, name: contact.name, phone: contact.phone, optin_chat: contact.optin_chat }
}

// POST /messages answers 201 or 202 and so stays a route (messaging.routes.ts): the send tools take the spec's
// arguments and hand POST /messages' body, checked by its rule, to the messaging service
const textBody = (args: { contact_id: string; text: string }) =>
  restRule(SendBody, { contact_id: args.contact_id, text: args.text }, 'body')
const templateBody = (args: { contact_id: string; template_id: string; variables?: Record<string, string> }) =>
  restRule(
    SendBody,
    { contact_id: args.contact_id, template: { id: args.template_id, variables: args.variables } },
    'body',
  )
const send = (ctx: ToolContext<Services>, body: Static<typeof SendBody>) =>
  ctx.services.messaging.send(ctx.tenant, body)

export const sendMessage = defineTool({
  name: 'send_message',
  title: 'Send a chat message',
  description:
    'Send a free-text WhatsApp message to a contact whose chat opt-in is confirmed. The channel only delivers free text within 24 hours of the contact’s last message (otherwise send_failed); use send_template outside that window.',
  scope: 'messages:write',
  rest: 'POST /messages',
  output: obj(
    {
      sent: Type.Boolean({ description: 'true: the message went out (message); false: it was queued (send_id)' }),
      message: Type.Optional(Message),
      send_id: Type.Optional(Type.String({ format: 'uuid' })),
      status: Type.Optional(Type.String()),
    },
    'POST /messages: the sent message (201), or the queued send (202)',
  ),
  kind: 'write',
  openWorld: true,
  input: Type.Object({
    contact_id: ContactId,
    text: Type.String({ minLength: 1, maxLength: 4000 }),
    idempotency_key: Type.Optional(IdempotencyKey),
  }),
  async preview(ctx, args) {
    textBody(args)
    const to = await contactPreview(ctx, args.contact_id)
    return { action: 'send a free-text chat message', channel: 'chat', recipients: 1, to, text: args.text }
  },
  async run(ctx, args) {
    const result = await send(ctx, textBody(args))
    return result.sent ? { sent: true, message: result.sent } : { sent: false, ...result.queued }
  },
})

export const sendTemplate = defineTool({
  name: 'send_template',
  title: 'Send an approved template',
  description:
    'Queue an approved chat template to a contact whose chat opt-in is confirmed; works at any time. Variables that come from the contact (name, full_name, email, phone and the account’s custom fields) are filled in; give values for the others (a contact without a value for a custom field the template uses, and no default, is refused naming it). The result has a send_id: read its status with get_send_status.',
  scope: 'messages:write',
  rest: 'POST /messages',
  output: obj(
    {
      queued: Type.Boolean({ description: 'true: queued with send_id (read it with get_send_status)' }),
      send_id: Type.Optional(Type.String({ format: 'uuid' })),
      status: Type.Optional(Type.String()),
      message: Type.Optional(Message),
    },
    'POST /messages with a template: the queued send (202)',
  ),
  kind: 'write',
  openWorld: true,
  input: Type.Object({
    contact_id: ContactId,
    template_id: Uuid('the template id, from list_templates (sendable true)'),
    variables: Type.Optional(
      Type.Record(Type.String({ maxLength: 100 }), Type.String({ maxLength: 1024 }), {
        maxProperties: 20,
        description: 'values of the variables that do not come from the contact (at most 20)',
      }),
    ),
    idempotency_key: Type.Optional(IdempotencyKey),
  }),
  async preview(ctx, args) {
    const body = templateBody(args)
    const to = await contactPreview(ctx, args.contact_id)
    const template = await ctx.services.templates.get(ctx.tenant, args.template_id)
    return {
      action: 'queue a template message',
      channel: 'chat',
      recipients: 1,
      to,
      template: { id: template.id, name: template.name, language: template.language, content: template.content },
      variables: body.template?.variables ?? {},
    }
  },
  async run(ctx, args) {
    const result = await send(ctx, templateBody(args))
    return result.queued ? { queued: true, ...result.queued } : { queued: false, message: result.sent }
  },
})

/** In the order the tool server lists them. */
export const messagingTools = [
  sendMessage,
  sendTemplate,
  tool(getSend, {
    name: 'get_send_status',
    title: 'Status of a template send',
    description:
      'The status of a template send made by send_template: queued, sent, delivered, read, failed or skipped (with reason).',
    rename: { send_id: 'id' },
    // the spec's tool takes a uuid (REST answers 404 for any other id)
    schemas: { send_id: Uuid('the send_id answered by send_template') },
  }),
]
