import { Type } from 'typebox'
import {
  AddTagsBody,
  CreateBody as ContactCreateBody,
  ListQuery as ContactListQuery,
  UpdateBody as ContactUpdateBody,
} from '../../modules/contacts/contacts.schemas.ts'
import { ConversationsQuery, HistoryQuery } from '../../modules/inbox/inbox.schemas.ts'
import { SendBody } from '../../modules/messaging/messaging.schemas.ts'
import { ScheduleBody } from '../../modules/newsletters/newsletters.schemas.ts'
import { CreateBody as TemplateCreateBody } from '../../modules/templates/templates.schemas.ts'
import { out } from '../outputs.ts'
import { defineTool, restRule, type ToolContext } from '../tool.ts'

/** The fourteen tools the spec names (section 4, "Tool server"), with exactly its names, fields and limits. */

const Uuid = (description: string) => Type.String({ format: 'uuid', description })
const ContactId = Uuid('the contact id (uuid), from search_contacts or create_contact')
const IdempotencyKey = Type.String({
  minLength: 1,
  maxLength: 255,
  pattern: '^[\\x21-\\x7e]+$',
  description:
    'printable ASCII without spaces; the same key within 24 hours returns the first result without sending again',
})
const Acquisition = Type.Union([Type.Literal('marketing'), Type.Literal('automation'), Type.Literal('service')], {
  description: 'how the contact was acquired; default marketing',
})

async function contactPreview(ctx: ToolContext, contactId: string) {
  const contact = await ctx.services.contacts.get(ctx.tenant, contactId)
  return {
    contact_id: contact.id,
    name: contact.name,
    phone: contact.phone,
    optin_chat: contact.optin_chat,
  }
}

export const searchContacts = defineTool({
  name: 'search_contacts',
  title: 'Search contacts',
  description:
    'Find contacts by a partial, case-insensitive match on name, e-mail or phone (spaces and hyphens in phone numbers do not matter), newest first. An empty query lists the newest contacts.',
  scope: 'contacts:read',
  rest: 'GET /contacts',
  output: out.search_contacts,
  kind: 'read',
  input: Type.Object({
    query: Type.Optional(Type.String({ maxLength: 100, description: 'search term; empty: no filter' })),
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 100, default: 25, description: 'how many contacts (1-100)' }),
    ),
  }),
  async run(ctx, args) {
    const query = restRule(ContactListQuery, { q: args.query, limit: args.limit, offset: 0 }, 'query')
    const { items, ...page } = await ctx.services.contacts.list(ctx.tenant, query)
    return { contacts: items, ...page }
  },
})

export const getContact = defineTool({
  name: 'get_contact',
  title: 'Get a contact',
  description: 'One contact with its tags, opt-in states (optin_chat, optin_email) and source.',
  scope: 'contacts:read',
  rest: 'GET /contacts/{id}',
  output: out.get_contact,
  kind: 'read',
  input: Type.Object({ contact_id: ContactId }),
  async run(ctx, args) {
    return { contact: await ctx.services.contacts.get(ctx.tenant, args.contact_id) }
  },
})

export const createContact = defineTool({
  name: 'create_contact',
  title: 'Create a contact',
  description:
    'Create a contact with a name and an e-mail address or a phone number in international format (+49...). Opt-ins start at none: this never subscribes anyone. A duplicate e-mail or phone answers contact_exists with the existing contact_id.',
  scope: 'contacts:write',
  rest: 'POST /contacts',
  output: out.create_contact,
  kind: 'write',
  input: Type.Object({
    name: Type.String({ minLength: 1, maxLength: 120 }),
    phone: Type.Optional(Type.String({ maxLength: 40, description: 'international format, such as +4915112345678' })),
    email: Type.Optional(Type.String({ maxLength: 254 })),
    acquisition: Type.Optional(Acquisition),
  }),
  async run(ctx, args) {
    const body = restRule(
      ContactCreateBody,
      { name: args.name, email: args.email, phone: args.phone, acquisition: args.acquisition },
      'body',
    )
    const result = await ctx.services.contacts.create(ctx.tenant, body, { upsert: false })
    return { ok: true, created: result.created, contact: result.contact }
  },
})

export const updateContact = defineTool({
  name: 'update_contact',
  title: 'Update a contact',
  description:
    'Change the name, phone or e-mail of a contact; only the given fields change. A changed phone resets the chat opt-in, a changed e-mail the e-mail opt-in, to none.',
  scope: 'contacts:write',
  rest: 'PATCH /contacts/{id}',
  output: out.update_contact,
  kind: 'write',
  idempotent: true,
  input: Type.Object({
    contact_id: ContactId,
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 120 })),
    phone: Type.Optional(Type.String({ maxLength: 40 })),
    email: Type.Optional(Type.String({ maxLength: 254 })),
  }),
  async run(ctx, args) {
    const { contact_id, ...change } = args
    const body = restRule(ContactUpdateBody, change, 'body')
    return { ok: true, contact: await ctx.services.contacts.update(ctx.tenant, contact_id, body) }
  },
})

export const addContactTag = defineTool({
  name: 'add_contact_tag',
  title: 'Tag a contact',
  description:
    'Add a tag to a contact (at most 30 tags per contact; a tag it already has changes nothing). System tags such as kauf, marketing or herkunft:... cannot be added.',
  scope: 'contacts:write',
  rest: 'POST /contacts/{id}/tags',
  output: out.add_contact_tag,
  kind: 'write',
  idempotent: true,
  input: Type.Object({
    contact_id: ContactId,
    tag: Type.String({ minLength: 1, maxLength: 60, description: 'the tag; the API accepts at most 40 characters' }),
  }),
  async run(ctx, args) {
    const body = restRule(AddTagsBody, { tag: args.tag }, 'body')
    const result = await ctx.services.contacts.addTags(ctx.tenant, args.contact_id, [body.tag as string])
    return { ok: true, ...result }
  },
})

export const sendMessage = defineTool({
  name: 'send_message',
  title: 'Send a chat message',
  description:
    'Send a free-text WhatsApp message to a contact whose chat opt-in is confirmed. The channel only delivers free text within 24 hours of the contact’s last message (otherwise send_failed); use send_template outside that window.',
  scope: 'messages:write',
  rest: 'POST /messages',
  output: out.send_message,
  kind: 'write',
  openWorld: true,
  input: Type.Object({
    contact_id: ContactId,
    text: Type.String({ minLength: 1, maxLength: 4000 }),
    idempotency_key: Type.Optional(IdempotencyKey),
  }),
  async preview(ctx, args) {
    restRule(SendBody, { contact_id: args.contact_id, text: args.text }, 'body')
    return {
      action: 'send a free-text chat message',
      channel: 'chat',
      recipients: 1,
      to: await contactPreview(ctx, args.contact_id),
      text: args.text,
    }
  },
  async run(ctx, args) {
    const body = restRule(SendBody, { contact_id: args.contact_id, text: args.text }, 'body')
    const result = await ctx.services.messaging.send(ctx.tenant, body)
    return result.sent ? { sent: true, message: result.sent } : { sent: false, ...result.queued }
  },
})

export const sendTemplate = defineTool({
  name: 'send_template',
  title: 'Send an approved template',
  description:
    'Queue an approved chat template to a contact whose chat opt-in is confirmed; works at any time. Variables that come from the contact (name, full_name, email, phone) are filled in; give values for the others. The result has a send_id: read its status with get_send_status.',
  scope: 'messages:write',
  rest: 'POST /messages',
  output: out.send_template,
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
    const body = restRule(
      SendBody,
      { contact_id: args.contact_id, template: { id: args.template_id, variables: args.variables } },
      'body',
    )
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
    const body = restRule(
      SendBody,
      { contact_id: args.contact_id, template: { id: args.template_id, variables: args.variables } },
      'body',
    )
    const result = await ctx.services.messaging.send(ctx.tenant, body)
    return result.queued ? { queued: true, ...result.queued } : { queued: false, message: result.sent }
  },
})

export const getSendStatus = defineTool({
  name: 'get_send_status',
  title: 'Status of a template send',
  description:
    'The status of a template send made by send_template: queued, sent, delivered, read, failed or skipped (with reason).',
  scope: 'messages:write',
  rest: 'GET /sends/{id}',
  output: out.get_send_status,
  kind: 'read',
  input: Type.Object({ send_id: Uuid('the send_id answered by send_template') }),
  async run(ctx, args) {
    return await ctx.services.messaging.sendRecord(ctx.tenant, args.send_id)
  },
})

const Channel = Type.Union([Type.Literal('chat'), Type.Literal('email')])

export const listConversations = defineTool({
  name: 'list_conversations',
  title: 'List conversations',
  description: 'Inbox conversations, newest first, optionally of one channel (chat or email).',
  scope: 'inbox:read',
  rest: 'GET /inbox/conversations',
  output: out.list_conversations,
  kind: 'read',
  input: Type.Object({
    channel: Type.Optional(Channel),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25 })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 100000, default: 0 })),
  }),
  async run(ctx, args) {
    const query = restRule(ConversationsQuery, args, 'query')
    const { items, ...page } = await ctx.services.inbox.listConversations(ctx.tenant, query)
    return { conversations: items, ...page }
  },
})

export const getConversationMessages = defineTool({
  name: 'get_conversation_messages',
  title: 'Read a conversation',
  description:
    'The newest messages of a conversation, oldest first within the page; offset pages backwards from the newest end.',
  scope: 'inbox:read',
  rest: 'GET /inbox/conversations/{id}/messages',
  output: out.get_conversation_messages,
  kind: 'read',
  input: Type.Object({
    conversation_id: Uuid('the conversation id, from list_conversations'),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25 })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 100000, default: 0 })),
  }),
  async run(ctx, args) {
    const query = restRule(HistoryQuery, { limit: args.limit, offset: args.offset }, 'query')
    const { items, ...page } = await ctx.services.inbox.conversationMessages(ctx.tenant, args.conversation_id, query)
    return { messages: items, ...page }
  },
})

export const listNewsletters = defineTool({
  name: 'list_newsletters',
  title: 'List newsletters',
  description: 'The newest newsletters with their status (draft, scheduled, sending, sent) and scheduled time.',
  scope: 'newsletters:read',
  rest: 'GET /newsletters',
  output: out.list_newsletters,
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    const { items, ...page } = await ctx.services.newsletters.list(ctx.tenant, { limit: 25, offset: 0 })
    return { newsletters: items, ...page }
  },
})

export const scheduleNewsletter = defineTool({
  name: 'schedule_newsletter',
  title: 'Schedule a newsletter',
  description:
    'Schedule a draft newsletter (or move a scheduled one) to a time in the future, at most one year ahead. It goes to every contact with a confirmed chat opt-in in its segment.',
  scope: 'newsletters:schedule',
  rest: 'POST /newsletters/{id}/schedule',
  output: out.schedule_newsletter,
  kind: 'write',
  idempotent: true,
  openWorld: true,
  input: Type.Object({
    newsletter_id: Uuid('the newsletter id, from list_newsletters'),
    scheduled_at: Type.String({
      format: 'date-time',
      maxLength: 40,
      description: 'date-time with a zone, such as 2027-03-01T09:00:00+01:00',
    }),
  }),
  async preview(ctx, args) {
    restRule(ScheduleBody, { scheduled_at: args.scheduled_at }, 'body')
    const newsletter = await ctx.services.newsletters.get(ctx.tenant, args.newsletter_id)
    return {
      action: newsletter.status === 'scheduled' ? 'reschedule a newsletter' : 'schedule a newsletter',
      channel: 'chat',
      newsletter: {
        id: newsletter.id,
        name: newsletter.name,
        subject: newsletter.subject,
        status: newsletter.status,
        segment: newsletter.segment,
        scheduled_at: newsletter.scheduled_at,
      },
      scheduled_at: args.scheduled_at,
      recipients: newsletter.recipients_estimate,
    }
  },
  async run(ctx, args) {
    const body = restRule(ScheduleBody, { scheduled_at: args.scheduled_at }, 'body')
    return { newsletter: await ctx.services.newsletters.schedule(ctx.tenant, args.newsletter_id, body) }
  },
})

export const listTemplates = defineTool({
  name: 'list_templates',
  title: 'List templates',
  description:
    'Message templates with their state, whether they can be sent now (sendable), their variables and the variables a caller may set (settable_variables).',
  scope: 'templates:read',
  rest: 'GET /templates',
  output: out.list_templates,
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    const { items, ...page } = await ctx.services.templates.list(ctx.tenant, { limit: 100, offset: 0 })
    return { templates: items, ...page }
  },
})

export const createTemplate = defineTool({
  name: 'create_template',
  title: 'Create a template',
  description:
    'Create a chat template as a draft (nothing goes to the provider). Variables in double curly braces, such as {{name}} or {{code}}. The answer lists issues that would stop a submission.',
  scope: 'templates:write',
  rest: 'POST /templates',
  output: out.create_template,
  kind: 'write',
  input: Type.Object({
    name: Type.String({ minLength: 1, maxLength: 120 }),
    text: Type.String({ minLength: 1, maxLength: 1024, description: 'the message text' }),
    language: Type.Optional(
      Type.String({ minLength: 2, maxLength: 10, description: 'such as de or en_US; default the account language' }),
    ),
  }),
  async run(ctx, args) {
    const body = restRule(
      TemplateCreateBody,
      { name: args.name, content: args.text, language: args.language, channel: 'chat' },
      'body',
    )
    return { ok: true, template: await ctx.services.templates.create(ctx.tenant, body) }
  },
})

export const namedTools = [
  searchContacts,
  getContact,
  createContact,
  updateContact,
  addContactTag,
  sendMessage,
  sendTemplate,
  getSendStatus,
  listConversations,
  getConversationMessages,
  listNewsletters,
  scheduleNewsletter,
  listTemplates,
  createTemplate,
]
