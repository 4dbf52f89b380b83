import { Type } from 'typebox'
import { ContactId, Uuid } from '../../platform/tools/common.ts'
import { operationTools } from '../../platform/tools/from-operation.ts'
import { estimateNewsletterRecipients, updateNewsletterContent } from './newsletters.app.ts'
import * as newsletters from './newsletters.routes.ts'
import { EstimateBody } from './newsletters.schemas.ts'
import type { NewsletterSegment } from './newsletters.tables.ts'

const NewsletterId = Uuid('the newsletter id, from list_newsletters')
const tool = operationTools<newsletters.NewslettersServices>({ id: { name: 'newsletter_id', schema: NewsletterId } })

export const newslettersTools = [
  tool(newsletters.listNewsletters, {
    name: 'list_newsletters',
    description: 'The newest newsletters with their status (draft, scheduled, sending, sent) and scheduled time.',
    pick: [],
    fixed: { query: { limit: 25, offset: 0 } },
  }),
  tool(newsletters.scheduleNewsletter, {
    name: 'schedule_newsletter',
    title: 'Schedule a newsletter',
    description:
      'Schedule a draft newsletter (or move a scheduled one) to a time in the future, at most one year ahead. It goes to every contact with a confirmed chat opt-in in its segment.',
    describe: { scheduled_at: 'date-time with a zone, such as 2027-03-01T09:00:00+01:00' },
    idempotent: true,
    openWorld: true,
    async preview(ctx, { tenant, params, body }) {
      const newsletter = await ctx.services.newsletters.get(tenant, params.id)
      const { id, name, subject, status, segment, scheduled_at } = newsletter
      return {
        action: status === 'scheduled' ? 'reschedule a newsletter' : 'schedule a newsletter',
        channel: 'chat',
        newsletter: { id, name, subject, status, segment, scheduled_at },
        scheduled_at: body.scheduled_at,
        recipients: newsletter.recipients_estimate,
      }
    },
  }),
  tool(newsletters.createNewsletter, {
    name: 'create_newsletter',
    description:
      'Create a chat newsletter as a draft (it is never sent by creation): subject and content required, content may use {{name}}. Schedule it with schedule_newsletter.',
  }),
  tool(newsletters.getNewsletter, {
    name: 'get_newsletter',
    title: 'Get a newsletter',
    description: 'One newsletter with its status, phase, segment, button, scheduled time and estimated recipients.',
  }),
  tool(newsletters.updateNewsletter, {
    name: 'update_newsletter',
    title: 'Change a newsletter’s button or segment',
    description:
      'Set or remove (null) the call-to-action button {text, url} and the recipient segment {tags_any, tags_all, tags_exclude, fields}; at least one of them. fields are conditions on custom fields such as [{"field": "level", "op": "equals", "value": "gold"}] or birthdays [{"field": "birthday", "op": "within_next_days", "days": 7, "ignore_year": true}]. Not while sending or sent; segment tags and fields must exist.',
  }),
  tool(newsletters.deleteNewsletter, {
    name: 'delete_newsletter',
    title: 'Delete a newsletter',
    description:
      'Delete a draft or scheduled newsletter (its queued sends are removed first); not while sending or sent.',
    async preview(ctx, { tenant, params }) {
      const { id, name, subject, status, scheduled_at } = await ctx.services.newsletters.get(tenant, params.id)
      return { action: 'delete a newsletter', newsletter: { id, name, subject, status, scheduled_at } }
    },
  }),
  tool(newsletters.cancelNewsletter, {
    name: 'cancel_newsletter',
    title: 'Cancel a scheduled newsletter',
    description: 'Take a scheduled newsletter back to draft; nothing goes out. Only while it is scheduled.',
  }),
  tool(newsletters.getNewsletterStatus, {
    name: 'get_newsletter_status',
    title: 'Newsletter delivery status',
    description:
      'How a newsletter’s sending goes: counts per status (queued, sent, delivered, read, failed, skipped), skip and failure reasons, and the phase.',
  }),
  tool(newsletters.duplicateNewsletter, {
    name: 'duplicate_newsletter',
    title: 'Duplicate a newsletter',
    description:
      'Copy a newsletter (any status, also a sent one) into a new draft named "<name> (copy)" with the same subject, content, call to action, header image and segment. The copy is only a draft: nothing is scheduled or sent.',
  }),
  tool(updateNewsletterContent, {
    name: 'update_newsletter_content',
    title: 'Change a newsletter draft’s text',
    description:
      'Change a draft newsletter’s name, subject or text (at least one; {{name}} and the contact variables work as on create_newsletter). Only a draft: cancel a scheduled one first. The button, segment and header image change with update_newsletter.',
  }),
  tool(newsletters.previewNewsletter, {
    name: 'preview_newsletter',
    title: 'Preview a newsletter for a contact',
    description:
      'The newsletter as one contact would get it: the text with its variables filled ({{name}} and the other contact variables), the button and header image, and whether the contact is a recipient now (confirmed chat opt-in and selected by the segment) or why not. Needs contacts:read as well. Sends nothing.',
    schemas: { contact_id: ContactId },
  }),
  tool(estimateNewsletterRecipients, {
    name: 'estimate_newsletter_recipients',
    title: 'Estimate a segment’s recipients',
    description:
      'How many contacts a newsletter segment would reach now (confirmed chat opt-in; tags_any, tags_all, tags_exclude and fields, conditions on custom fields, combine with AND; null or {} selects every confirmed contact), before saving it with update_newsletter. Tags no contact carries and field conditions that do not fit the account’s fields are errors naming them. Stores nothing.',
    // the tool may leave the segment out (every confirmed contact), where the operation's body names it
    omit: ['segment'],
    extra: { segment: Type.Optional(EstimateBody.properties.segment) },
    kind: 'read',
    run: (ctx, { tenant }, { segment }) =>
      ctx.services.newsletters.estimate(tenant, (segment ?? null) as NewsletterSegment | null),
  }),
  tool(newsletters.listNewsletterRecipients, {
    name: 'list_newsletter_recipients',
    title: 'List a newsletter’s recipients',
    description:
      'Who a newsletter went to: its send records (written when it starts) in contact order with status (queued, sending, sent, delivered, read, failed, skipped), the reason of a skip or failure and the times; filter by status, page with limit and offset. Empty before it starts.',
  }),
  tool(newsletters.listNewsletterClicks, {
    name: 'list_newsletter_clicks',
    title: 'List clicks on a newsletter’s button',
    description:
      'Every click on a newsletter’s tracked call-to-action button, newest first: which contact, when, and the address it opened. Empty when the button is not tracked (get_newsletter shows cta_tracking and why).',
  }),
  tool(newsletters.getNewsletterStatistics, {
    name: 'get_newsletter_statistics',
    title: 'Statistics of a newsletter',
    description:
      'How a newsletter performed: its sends by the furthest status reached (sent, delivered, read, failed, skipped) with delivery and read rate, and the clicks on its button with the click rate (recipients who clicked / delivered). get_newsletter_status shows the sending progress instead.',
  }),
  tool(newsletters.checkNewsletter, {
    name: 'check_newsletter',
    title: 'Check a newsletter before scheduling',
    description:
      'Check a newsletter against the WhatsApp template rules scheduling applies (subject line and text together at most 1024 characters, variables and their placement, the button, the header image): schedulable, and the English issues that would refuse it. Makes and submits nothing.',
  }),
]
