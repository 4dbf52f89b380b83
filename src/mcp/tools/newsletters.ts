import { Type } from 'typebox'
import {
  ClicksQuery,
  ContentBody,
  EstimateBody,
  RecipientsQuery,
  Segment,
} from '../../modules/newsletters/newsletters.schemas.ts'
import { requireScope } from '../../platform/auth/authenticate.ts'
import { out } from '../outputs.ts'
import { defineTool, restRule } from '../tool.ts'
import { ContactId, paging, Uuid } from './common.ts'

/** Newsletters beyond their REST basics: copies, previews, the recipients estimate, who got it and who clicked. */

const NewsletterId = Uuid('the newsletter id, from list_newsletters')

export const duplicateNewsletter = defineTool({
  name: 'duplicate_newsletter',
  title: 'Duplicate a newsletter',
  description:
    'Copy a newsletter (any status, also a sent one) into a new draft named "<name> (copy)" with the same subject, content, call to action, header image and segment. The copy is only a draft: nothing is scheduled or sent.',
  scope: 'newsletters:write',
  rest: 'POST /newsletters/{id}/duplicate',
  output: out.duplicate_newsletter,
  kind: 'write',
  input: Type.Object({ newsletter_id: NewsletterId }),
  async run(ctx, args) {
    return { newsletter: await ctx.services.newsletters.duplicate(ctx.tenant, args.newsletter_id) }
  },
})

export const previewNewsletter = defineTool({
  name: 'preview_newsletter',
  title: 'Preview a newsletter for a contact',
  description:
    'The newsletter as one contact would get it: the text with its variables filled ({{name}} and the other contact variables), the button and header image, and whether the contact is a recipient now (confirmed chat opt-in and selected by the segment) or why not. Needs contacts:read as well. Sends nothing.',
  scope: 'newsletters:read',
  rest: 'GET /newsletters/{id}/preview',
  output: out.preview_newsletter,
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
    'How many contacts a newsletter segment would reach now (confirmed chat opt-in; tags_any, tags_all, tags_exclude combine with AND; null or {} selects every confirmed contact), before saving it with update_newsletter. Tags no contact carries are an error naming them. Stores nothing.',
  scope: 'newsletters:read',
  rest: 'POST /app/newsletters/estimate',
  output: out.estimate_newsletter_recipients,
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
  output: out.list_newsletter_recipients,
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
  output: out.list_newsletter_clicks,
  kind: 'read',
  input: Type.Object({ newsletter_id: NewsletterId, ...paging(100, 25) }),
  async run(ctx, args) {
    const { newsletter_id, ...rest } = args
    const query = restRule(ClicksQuery, rest, 'query')
    const { items, ...page } = await ctx.services.newsletters.clicks(ctx.tenant, newsletter_id, query)
    return { clicks: items, ...page }
  },
})

export const updateNewsletterContent = defineTool({
  name: 'update_newsletter_content',
  title: 'Change a newsletter draft’s text',
  description:
    'Change a draft newsletter’s name, subject or text (at least one; {{name}} and the contact variables work as on create_newsletter). Only a draft: cancel a scheduled one first. The button, segment and header image change with update_newsletter.',
  scope: 'newsletters:write',
  rest: 'PATCH /app/newsletters/{id}/content',
  output: out.update_newsletter_content,
  kind: 'write',
  idempotent: true,
  input: Type.Object({ newsletter_id: NewsletterId, ...ContentBody.properties }),
  async run(ctx, args) {
    const { newsletter_id, ...change } = args
    const body = restRule(ContentBody, change, 'body')
    return { newsletter: await ctx.services.newsletters.updateContent(ctx.tenant, newsletter_id, body) }
  },
})

export const getNewsletterStatistics = defineTool({
  name: 'get_newsletter_statistics',
  title: 'Statistics of a newsletter',
  description:
    'How a newsletter performed: its sends by the furthest status reached (sent, delivered, read, failed, skipped) with delivery and read rate, and the clicks on its button with the click rate (recipients who clicked / delivered). get_newsletter_status shows the sending progress instead.',
  scope: 'stats:read',
  rest: 'GET /newsletters/{id}/statistics',
  output: out.get_newsletter_statistics,
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
  output: out.check_newsletter,
  kind: 'read',
  input: Type.Object({ newsletter_id: NewsletterId }),
  async run(ctx, args) {
    return await ctx.services.newsletters.check(ctx.tenant, args.newsletter_id)
  },
})

export const newsletterTools = [
  duplicateNewsletter,
  updateNewsletterContent,
  previewNewsletter,
  estimateNewsletterRecipients,
  listNewsletterRecipients,
  listNewsletterClicks,
  getNewsletterStatistics,
  checkNewsletter,
]
