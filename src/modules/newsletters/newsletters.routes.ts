import type { FastifyInstance } from 'fastify'
import { requireScope } from '../../platform/auth/authenticate.ts'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import { namedPage } from '../../platform/http/pagination.ts'
import {
  CheckResponse,
  ClickPage,
  ClicksQuery,
  CreateBody,
  Deleted,
  ListQuery,
  NewsletterPage,
  NewsletterParams,
  NewsletterResponse,
  NewsletterStatistics,
  PreviewQuery,
  PreviewResponse,
  RecipientPage,
  RecipientsQuery,
  ScheduleBody,
  StatusResponse,
  UpdateBody,
} from './newsletters.schemas.ts'
import type { NewslettersService } from './newsletters.service.ts'

const tags = ['newsletters']
/** The services the newsletters' operations call. */
export interface NewslettersServices {
  newsletters: NewslettersService
}

const operation = operationsUsing<NewslettersServices>()

export const listNewsletters = operation({
  method: 'GET',
  path: '/newsletters',
  scope: 'newsletters:read',
  operationId: 'listNewsletters',
  summary: 'List newsletters',
  description: 'Newest first. The list carries no recipients_estimate; GET /newsletters/{id} does.',
  tags,
  query: ListQuery,
  response: NewsletterPage,
  handle: async ({ newsletters }, { tenant, query }) => namedPage('newsletters', await newsletters.list(tenant, query)),
})

export const createNewsletter = operation({
  method: 'POST',
  path: '/newsletters',
  scope: 'newsletters:write',
  operationId: 'createNewsletter',
  summary: 'Create a newsletter draft',
  description:
    'Always a draft: creation never sends. There is no "send now": a newsletter goes out when it is scheduled (POST /newsletters/{id}/schedule). `name` defaults to the subject. `header_media` (optional): a media library file (`media_id`) or a public https address (`url`) shown above the text.',
  tags,
  body: CreateBody,
  status: 201,
  response: NewsletterResponse,
  errors: {
    400: 'bad_request: subject or content blank; segment_unknown_tags: the segment names tags that do not exist; cta_url_invalid: cta.url is not an https address; header_media_form: give either media_id or url; header_media_not_image: the media is not an image',
    404: 'not_found (key media_not_found): header_media.media_id names no media of this account',
  },
  async handle({ newsletters }, { tenant, body }) {
    return { newsletter: await newsletters.create(tenant, body) }
  },
})

export const getNewsletter = operation({
  method: 'GET',
  path: '/newsletters/{id}',
  scope: 'newsletters:read',
  operationId: 'getNewsletter',
  summary: 'A newsletter',
  tags,
  params: NewsletterParams,
  response: NewsletterResponse,
  async handle({ newsletters }, { tenant, params }) {
    return { newsletter: await newsletters.get(tenant, params.id) }
  },
})

export const updateNewsletter = operation({
  method: 'PATCH',
  path: '/newsletters/{id}',
  scope: 'newsletters:write',
  operationId: 'updateNewsletter',
  summary: "Change a newsletter's call to action or segment",
  description:
    "At least one of `cta`, `segment` and `header_media` (the spec names cta and segment; the header image is an addition). 400 when the newsletter is sending or sent (key newsletter_locked) or when the segment names tags no contact carries (key segment_unknown_tags, with `tags`). `header_media` is a media library file of this account (`media_id`; another account's is a 404, key media_not_found) or a public https address (`url`). A changed button or header image needs a new template at the provider: it is made when the newsletter is scheduled.",
  tags,
  params: NewsletterParams,
  body: UpdateBody,
  response: NewsletterResponse,
  errors: {
    400: "bad_request: nothing to change, or subject, content or name blank; segment_unknown_tags: the segment names tags that do not exist; cta_url_invalid: cta.url is not an https address; newsletter_locked: the newsletter is no longer a draft; newsletter_not_draft: only a draft's text can be changed; header_media_form: give either media_id or url; header_media_not_image: the media is not an image",
    404: 'not_found (key media_not_found): header_media.media_id names no media of this account',
  },
  async handle({ newsletters }, { tenant, params, body }) {
    return { newsletter: await newsletters.update(tenant, params.id, body) }
  },
})

export const deleteNewsletter = operation({
  method: 'DELETE',
  path: '/newsletters/{id}',
  scope: 'newsletters:delete',
  operationId: 'deleteNewsletter',
  summary: 'Delete a draft or scheduled newsletter',
  description: 'Its queued send jobs are removed first. 400 when it is sending or sent (key newsletter_locked).',
  tags,
  params: NewsletterParams,
  response: Deleted,
  errors: { 400: 'newsletter_locked: a scheduled, sending or sent newsletter cannot be deleted' },
  async handle({ newsletters }, { tenant, params }) {
    return newsletters.remove(tenant, params.id)
  },
})

export const scheduleNewsletter = operation({
  method: 'POST',
  path: '/newsletters/{id}/schedule',
  scope: 'newsletters:schedule',
  idempotent: true,
  operationId: 'scheduleNewsletter',
  summary: 'Schedule (or reschedule) a newsletter',
  description:
    'draft → scheduled, scheduled → scheduled at the new time. `scheduled_at` must be in the future and at most one year ahead (422 scheduled_at_invalid); a malformed time or one without a zone is a 400. 409 newsletter_state when it is sending or sent. The newsletter goes out as a WhatsApp marketing template (its subject as a bold first line, then the content, the CTA as a URL button): scheduling makes and submits that template, and a text the template check refuses is a 400 (key newsletter_template_invalid, with the issues). At the time, nothing goes out until the provider approved the template and sending is possible; meanwhile the status says why it waits.',
  tags,
  params: NewsletterParams,
  body: ScheduleBody,
  response: NewsletterResponse,
  errors: {
    400: 'bad_request: scheduled_at without a zone; newsletter_template_invalid: the newsletter cannot go out as a WhatsApp template',
    409: 'newsletter_state: the newsletter is not a draft',
    422: 'scheduled_at_invalid: scheduled_at lies in the past or too far ahead',
  },
  async handle({ newsletters }, { tenant, params, body }) {
    return { newsletter: await newsletters.schedule(tenant, params.id, body) }
  },
})

export const cancelNewsletter = operation({
  method: 'POST',
  path: '/newsletters/{id}/cancel',
  scope: 'newsletters:schedule',
  operationId: 'cancelNewsletter',
  summary: 'Cancel a scheduled newsletter (back to draft)',
  description: '400 when it is not scheduled (key newsletter_not_scheduled).',
  tags,
  params: NewsletterParams,
  response: NewsletterResponse,
  errors: { 400: 'newsletter_not_scheduled: only a scheduled newsletter can be cancelled' },
  async handle({ newsletters }, { tenant, params }) {
    return { newsletter: await newsletters.cancel(tenant, params.id) }
  },
})

export const getNewsletterStatus = operation({
  method: 'GET',
  path: '/newsletters/{id}/status',
  scope: 'newsletters:read',
  operationId: 'getNewsletterStatus',
  summary: "A newsletter's sending status",
  description:
    'Counts of its send records per status (sending ones count as queued), skip and failure reasons with counts, and the phase: scheduled, waiting_for_approval, waiting_for_sending (with stop_reason and resumes_at), fanout, sending, done, stopped. German aliases per section 9. Reads only.',
  tags,
  params: NewsletterParams,
  response: StatusResponse,
  async handle({ newsletters }, { tenant, params }) {
    return newsletters.status(tenant, params.id)
  },
})

export const duplicateNewsletter = operation({
  method: 'POST',
  path: '/newsletters/{id}/duplicate',
  scope: 'newsletters:write',
  operationId: 'duplicateNewsletter',
  summary: 'Duplicate a newsletter as a new draft',
  description:
    'A new draft with the same subject, content, call to action, header image and segment, named "<name> (copy)"; any newsletter (also a sent one) can be copied. Nothing is scheduled or sent.',
  tags,
  params: NewsletterParams,
  status: 201,
  response: NewsletterResponse,
  async handle({ newsletters }, { tenant, params }) {
    return { newsletter: await newsletters.duplicate(tenant, params.id) }
  },
})

export const previewNewsletter = operation({
  method: 'GET',
  path: '/newsletters/{id}/preview',
  scope: 'newsletters:read',
  operationId: 'previewNewsletter',
  summary: 'Preview a newsletter for one contact',
  description:
    "The text as this contact would get it (the subject as a bold first line, then the content, contact variables filled), its button and header image, and whether the contact is a recipient now (chat opt-in confirmed, selected by the segment). Needs contacts:read too, since it shows the contact's data. Another account's contact is a 404. Reads only; nothing is sent.",
  tags,
  params: NewsletterParams,
  query: PreviewQuery,
  response: PreviewResponse,
  async handle({ newsletters }, { tenant, params, query }) {
    requireScope(tenant, 'contacts:read')
    return newsletters.preview(tenant, params.id, query.contact_id)
  },
})

export const listNewsletterRecipients = operation({
  method: 'GET',
  path: '/newsletters/{id}/recipients',
  scope: 'newsletters:read',
  operationId: 'listNewsletterRecipients',
  summary: "A newsletter's recipients with their send status",
  description:
    'Its send records (written when it starts: the recipients snapshot) in contact order, optionally filtered by status, with the reason of a skipped or failed send and the times. Empty before it starts.',
  tags,
  params: NewsletterParams,
  query: RecipientsQuery,
  response: RecipientPage,
  handle: async ({ newsletters }, { tenant, params, query }) =>
    namedPage('recipients', await newsletters.recipients(tenant, params.id, query)),
})

export const listNewsletterClicks = operation({
  method: 'GET',
  path: '/newsletters/{id}/clicks',
  scope: 'newsletters:read',
  operationId: 'listNewsletterClicks',
  summary: "Clicks on a newsletter's call to action",
  description:
    'Every click on its tracked CTA short links, newest first: the contact, when, the address. Empty when the CTA is not tracked (see cta_tracking).',
  tags,
  params: NewsletterParams,
  query: ClicksQuery,
  response: ClickPage,
  handle: async ({ newsletters }, { tenant, params, query }) =>
    namedPage('clicks', await newsletters.clicks(tenant, params.id, query)),
})

export const getNewsletterStatistics = operation({
  method: 'GET',
  path: '/newsletters/{id}/statistics',
  scope: 'stats:read',
  operationId: 'getNewsletterStatistics',
  summary: "A newsletter's statistics",
  description:
    'Its sends by the furthest status they reached (a read send counts as sent, delivered and read) with delivery and read rate, and the clicks on its tracked CTA with the click rate (clicking recipients / delivered). GET /newsletters/{id}/status answers the sending progress by current status. Scope stats:read.',
  tags,
  params: NewsletterParams,
  response: NewsletterStatistics,
  async handle({ newsletters }, { tenant, params }) {
    return newsletters.statistics(tenant, params.id)
  },
})

export const checkNewsletter = operation({
  method: 'GET',
  path: '/newsletters/{id}/check',
  scope: 'newsletters:read',
  operationId: 'checkNewsletter',
  summary: 'Check a newsletter against the WhatsApp template rules before scheduling',
  description:
    'The template check of the newsletter as scheduling would make it (the subject as a bold first line and the text, at most 1024 characters together; variables; the CTA button; the header image): `schedulable` and the `issues` that would refuse it (400 newsletter_template_invalid). Nothing is made or submitted.',
  tags,
  params: NewsletterParams,
  response: CheckResponse,
  async handle({ newsletters }, { tenant, params }) {
    return newsletters.check(tenant, params.id)
  },
})

export function newslettersRoutes(services: NewslettersServices) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, services, [
      listNewsletters,
      createNewsletter,
      getNewsletter,
      updateNewsletter,
      deleteNewsletter,
      scheduleNewsletter,
      cancelNewsletter,
      getNewsletterStatus,
      duplicateNewsletter,
      previewNewsletter,
      listNewsletterRecipients,
      listNewsletterClicks,
      getNewsletterStatistics,
      checkNewsletter,
    ])
  }
}
