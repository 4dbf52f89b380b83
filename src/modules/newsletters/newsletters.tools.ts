import { Type } from 'typebox'
import { requireScope } from '../../platform/auth/authenticate.ts'
import { ContactId, paging, Uuid } from '../../platform/tools/common.ts'
import { restRule, toolsUsing } from '../../platform/tools/tool.ts'
import {
  CheckResponse,
  ClickPage,
  ClicksQuery,
  ContentBody,
  Deleted,
  EstimateBody,
  EstimateResponse,
  CreateBody as NewsletterCreateBody,
  NewsletterPage,
  NewsletterResponse,
  NewsletterStatistics,
  UpdateBody as NewsletterUpdateBody,
  PreviewResponse,
  RecipientPage,
  RecipientsQuery,
  ScheduleBody,
  Segment,
  StatusResponse,
} from './newsletters.schemas.ts'
import type { NewslettersService } from './newsletters.service.ts'

/** The module services these tools call (the tool server hands them in). */
interface Services {
  newsletters: NewslettersService
}

const defineTool = toolsUsing<Services>()

const NewsletterId = Uuid('the newsletter id, from list_newsletters')

export const listNewsletters = defineTool({
  name: 'list_newsletters',
  title: 'List newsletters',
  description: 'The newest newsletters with their status (draft, scheduled, sending, sent) and scheduled time.',
  scope: 'newsletters:read',
  rest: 'GET /newsletters',
  output: NewsletterPage,
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
  output: NewsletterResponse,
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

export const createNewsletter = defineTool({
  name: 'create_newsletter',
  title: 'Create a newsletter draft',
  description:
    'Create a chat newsletter as a draft (it is never sent by creation): subject and content required, content may use {{name}}. Schedule it with schedule_newsletter.',
  scope: 'newsletters:write',
  rest: 'POST /newsletters',
  output: NewsletterResponse,
  kind: 'write',
  input: Type.Object(NewsletterCreateBody.properties),
  async run(ctx, args) {
    const body = restRule(NewsletterCreateBody, args, 'body')
    return { newsletter: await ctx.services.newsletters.create(ctx.tenant, body) }
  },
})

export const getNewsletter = defineTool({
  name: 'get_newsletter',
  title: 'Get a newsletter',
  description: 'One newsletter with its status, phase, segment, button, scheduled time and estimated recipients.',
  scope: 'newsletters:read',
  rest: 'GET /newsletters/{id}',
  output: NewsletterResponse,
  kind: 'read',
  input: Type.Object({ newsletter_id: NewsletterId }),
  async run(ctx, args) {
    return { newsletter: await ctx.services.newsletters.get(ctx.tenant, args.newsletter_id) }
  },
})

export const updateNewsletter = defineTool({
  name: 'update_newsletter',
  title: 'Change a newsletter’s button or segment',
  description:
    'Set or remove (null) the call-to-action button {text, url} and the recipient segment {tags_any, tags_all, tags_exclude, fields}; at least one of them. fields are conditions on custom fields such as [{"field": "level", "op": "equals", "value": "gold"}] or birthdays [{"field": "birthday", "op": "within_next_days", "days": 7, "ignore_year": true}]. Not while sending or sent; segment tags and fields must exist.',
  scope: 'newsletters:write',
  rest: 'PATCH /newsletters/{id}',
  output: NewsletterResponse,
  kind: 'write',
  idempotent: true,
  input: Type.Object({ newsletter_id: NewsletterId, ...NewsletterUpdateBody.properties }),
  async run(ctx, args) {
    const { newsletter_id, ...change } = args
    const body = restRule(NewsletterUpdateBody, change, 'body')
    return { newsletter: await ctx.services.newsletters.update(ctx.tenant, newsletter_id, body) }
  },
})

export const deleteNewsletter = defineTool({
  name: 'delete_newsletter',
  title: 'Delete a newsletter',
  description:
    'Delete a draft or scheduled newsletter (its queued sends are removed first); not while sending or sent.',
  scope: 'newsletters:delete',
  rest: 'DELETE /newsletters/{id}',
  output: Deleted,
  kind: 'destructive',
  input: Type.Object({ newsletter_id: NewsletterId }),
  async preview(ctx, args) {
    const newsletter = await ctx.services.newsletters.get(ctx.tenant, args.newsletter_id)
    return {
      action: 'delete a newsletter',
      newsletter: {
        id: newsletter.id,
        name: newsletter.name,
        subject: newsletter.subject,
        status: newsletter.status,
        scheduled_at: newsletter.scheduled_at,
      },
    }
  },
  async run(ctx, args) {
    return { ...(await ctx.services.newsletters.remove(ctx.tenant, args.newsletter_id)) }
  },
})

export const cancelNewsletter = defineTool({
  name: 'cancel_newsletter',
  title: 'Cancel a scheduled newsletter',
  description: 'Take a scheduled newsletter back to draft; nothing goes out. Only while it is scheduled.',
  scope: 'newsletters:schedule',
  rest: 'POST /newsletters/{id}/cancel',
  output: NewsletterResponse,
  kind: 'write',
  input: Type.Object({ newsletter_id: NewsletterId }),
  async run(ctx, args) {
    return { newsletter: await ctx.services.newsletters.cancel(ctx.tenant, args.newsletter_id) }
  },
})

export const getNewsletterStatus = defineTool({
  name: 'get_newsletter_status',
  title: 'Newsletter delivery status',
  description:
    'How a newsletter’s sending goes: counts per status (queued, sent, delivered, read, failed, skipped), skip and failure reasons, and the phase.',
  scope: 'newsletters:read',
  rest: 'GET /newsletters/{id}/status',
  output: StatusResponse,
  kind: 'read',
  input: Type.Object({ newsletter_id: NewsletterId }),
  async run(ctx, args) {
    return { ...(await ctx.services.newsletters.status(ctx.tenant, args.newsletter_id)) }
  },
})

export const duplicateNewsletter = defineTool({
  name: 'duplicate_newsletter',
  title: 'Duplicate a newsletter',
  description:
    'Copy a newsletter (any status, also a sent one) into a new draft named "<name> (copy)" with the same subject, content, call to action, header image and segment. The copy is only a draft: nothing is scheduled or sent.',
  scope: 'newsletters:write',
  rest: 'POST /newsletters/{id}/duplicate',
  output: NewsletterResponse,
  kind: 'write',
  input: Type.Object({ newsletter_id: NewsletterId }),
  async run(ctx, args) {
    return { newsletter: await ctx.services.newsletters.duplicate(ctx.tenant, args.newsletter_id) }
  },
})

export const updateNewsletterContent = defineTool({
  name: 'update_newsletter_content',
  title: 'Change a newsletter draft’s text',
  description:
    'Change a draft newsletter’s name, subject or text (at least one; {{name}} and the contact variables work as on create_newsletter). Only a draft: cancel a scheduled one first. The button, segment and header image change with update_newsletter.',
  scope: 'newsletters:write',
  rest: 'PATCH /app/newsletters/{id}/content',
  output: NewsletterResponse,
  kind: 'write',
  idempotent: true,
  input: Type.Object({ newsletter_id: NewsletterId, ...ContentBody.properties }),
  async run(ctx, args) {
    const { newsletter_id, ...change } = args
    const body = restRule(ContentBody, change, 'body')
    return { newsletter: await ctx.services.newsletters.updateContent(ctx.tenant, newsletter_id, body) }
  },
})

export const previewNewsletter = defineTool({
  name: 'preview_newsletter',
  title: 'Preview a newsletter for a contact',
  description:
    'The newsletter as one contact would get it: the text with its variables filled ({{name}} and the other contact variables), the button and header image, and whether the contact is a recipient now (confirmed chat opt-in and selected by the segment) or why not. Needs contacts:read as well. Sends nothing.',
  scope: 'newsletters:read',
  rest: 'GET /newsletters/{id}/preview',
  output: PreviewResponse,
  kind: 'read',
  input: Type.Object({ newsletter_id: NewsletterId, contact_id: ContactId }),
  async run(ctx, args) {
    requireScope(ctx.tenant, 'contacts:read')
    return await ctx.services.newsletters.preview(ctx.tenant, args.newsletter_id, args.contact_id)
  },
})

export const estimateNewsletterRecipients = defineTool({
  name: 'estimate_newsletter_recipients',
  title: 'Estimate a segment’s recipients',
  description:
    'How many contacts a newsletter segment would reach now (confirmed chat opt-in; tags_any, tags_all, tags_exclude and fields, conditions on custom fields, combine with AND; null or {} selects every confirmed contact), before saving it with update_newsletter. Tags no contact carries and field conditions that do not fit the account’s fields are errors naming them. Stores nothing.',
  scope: 'newsletters:read',
  rest: 'POST /app/newsletters/estimate',
  output: EstimateResponse,
  kind: 'read',
  input: Type.Object({ segment: Type.Optional(Type.Union([Segment, Type.Null()])) }),
  async run(ctx, args) {
    const body = restRule(EstimateBody, { segment: args.segment ?? null }, 'body')
    return await ctx.services.newsletters.estimate(ctx.tenant, body.segment ?? null)
  },
})

export const listNewsletterRecipients = defineTool({
  name: 'list_newsletter_recipients',
  title: 'List a newsletter’s recipients',
  description:
    'Who a newsletter went to: its send records (written when it starts) in contact order with status (queued, sending, sent, delivered, read, failed, skipped), the reason of a skip or failure and the times; filter by status, page with limit and offset. Empty before it starts.',
  scope: 'newsletters:read',
  rest: 'GET /newsletters/{id}/recipients',
  output: RecipientPage,
  kind: 'read',
  input: Type.Object({
    newsletter_id: NewsletterId,
    status: Type.Optional(
      Type.Union(['queued', 'sending', 'sent', 'delivered', 'read', 'failed', 'skipped'].map((s) => Type.Literal(s))),
    ),
    ...paging(100, 25),
  }),
  async run(ctx, args) {
    const { newsletter_id, ...rest } = args
    const query = restRule(RecipientsQuery, rest, 'query')
    const { items, ...page } = await ctx.services.newsletters.recipients(ctx.tenant, newsletter_id, query)
    return { recipients: items, ...page }
  },
})

export const listNewsletterClicks = defineTool({
  name: 'list_newsletter_clicks',
  title: 'List clicks on a newsletter’s button',
  description:
    'Every click on a newsletter’s tracked call-to-action button, newest first: which contact, when, and the address it opened. Empty when the button is not tracked (get_newsletter shows cta_tracking and why).',
  scope: 'newsletters:read',
  rest: 'GET /newsletters/{id}/clicks',
  output: ClickPage,
  kind: 'read',
  input: Type.Object({ newsletter_id: NewsletterId, ...paging(100, 25) }),
  async run(ctx, args) {
    const { newsletter_id, ...rest } = args
    const query = restRule(ClicksQuery, rest, 'query')
    const { items, ...page } = await ctx.services.newsletters.clicks(ctx.tenant, newsletter_id, query)
    return { clicks: items, ...page }
  },
})

export const getNewsletterStatistics = defineTool({
  name: 'get_newsletter_statistics',
  title: 'Statistics of a newsletter',
  description:
    'How a newsletter performed: its sends by the furthest status reached (sent, delivered, read, failed, skipped) with delivery and read rate, and the clicks on its button with the click rate (recipients who clicked / delivered). get_newsletter_status shows the sending progress instead.',
  scope: 'stats:read',
  rest: 'GET /newsletters/{id}/statistics',
  output: NewsletterStatistics,
  kind: 'read',
  input: Type.Object({ newsletter_id: NewsletterId }),
  async run(ctx, args) {
    return await ctx.services.newsletters.statistics(ctx.tenant, args.newsletter_id)
  },
})

export const checkNewsletter = defineTool({
  name: 'check_newsletter',
  title: 'Check a newsletter before scheduling',
  description:
    'Check a newsletter against the WhatsApp template rules scheduling applies (subject line and text together at most 1024 characters, variables and their placement, the button, the header image): schedulable, and the English issues that would refuse it. Makes and submits nothing.',
  scope: 'newsletters:read',
  rest: 'GET /newsletters/{id}/check',
  output: CheckResponse,
  kind: 'read',
  input: Type.Object({ newsletter_id: NewsletterId }),
  async run(ctx, args) {
    return await ctx.services.newsletters.check(ctx.tenant, args.newsletter_id)
  },
})

/** In the order the tool server lists them. */
export const newslettersTools = [
  listNewsletters,
  scheduleNewsletter,
  createNewsletter,
  getNewsletter,
  updateNewsletter,
  deleteNewsletter,
  cancelNewsletter,
  getNewsletterStatus,
  duplicateNewsletter,
  updateNewsletterContent,
  previewNewsletter,
  estimateNewsletterRecipients,
  listNewsletterRecipients,
  listNewsletterClicks,
  getNewsletterStatistics,
  checkNewsletter,
]
