import { type TSchema, Type } from 'typebox'
import { pageSchema, paginationQuery } from '../../platform/http/pagination.ts'
import { SendFunnel } from '../../platform/http/statistics.ts'
import { FieldConditions } from '../contacts/index.ts'
import { CTA_TRACKING, NEWSLETTER_PHASES, NEWSLETTER_STATUSES } from './newsletters.tables.ts'

const Nullable = <T extends TSchema>(schema: T, description?: string) =>
  Type.Union([schema, Type.Null()], description ? { description } : {})
const literals = <T extends readonly string[]>(values: T) => Type.Union(values.map((v) => Type.Literal(v)))
const at = Type.String({ format: 'date-time' })

export const LIMITS = { name: 200, subject: 200, content: 20_000, ctaText: 200, ctaUrl: 2000, segmentTags: 50 }

const Tag = Type.String({ minLength: 1, maxLength: 40 })
const TagList = (description: string) => Type.Array(Tag, { maxItems: LIMITS.segmentTags, description })

export const Segment = Type.Object(
  {
    tags_any: Type.Optional(TagList('contacts with at least one of these tags')),
    tags_all: Type.Optional(TagList('contacts with every one of these tags')),
    tags_exclude: Type.Optional(TagList('contacts with none of these tags')),
    fields: Type.Optional(FieldConditions),
  },
  {
    additionalProperties: false,
    description:
      'A recipient filter by tags and custom fields, applied to the contacts whose chat opt-in is confirmed; every part is optional and they combine with AND. null: every confirmed contact.',
  },
)

export const Cta = Type.Object(
  {
    text: Type.String({ minLength: 1, maxLength: LIMITS.ctaText }),
    url: Type.String({ minLength: 1, maxLength: LIMITS.ctaUrl, description: 'https address the button opens' }),
  },
  { additionalProperties: false, description: 'A URL button under the message; null removes it.' },
)

export const HeaderMediaInput = Type.Object(
  {
    media_id: Type.Optional(
      Type.String({
        maxLength: 40,
        description:
          "a media library file of this account (an image); another account's id is a 404 (key media_not_found)",
      }),
    ),
    url: Type.Optional(
      Type.String({ minLength: 1, maxLength: 2000, description: 'a public https address of a JPEG or PNG' }),
    ),
    mime_type: Type.Optional(Type.String({ maxLength: 100, description: 'image/jpeg or image/png (url form only)' })),
  },
  {
    additionalProperties: false,
    description:
      "A header image above the text: media_id or url, not both (400 header_media_form); a media file that is not an image is a 400 (header_media_not_image). It goes to the provider as the template's header image.",
  },
)

export const CreateBody = Type.Object({
  name: Type.Optional(Type.String({ maxLength: LIMITS.name })),
  subject: Type.String({ minLength: 1, maxLength: LIMITS.subject }),
  content: Type.String({
    minLength: 1,
    maxLength: LIMITS.content,
    description:
      'The message text; may use {{name}}, the contact variables of POST /messages and the account’s custom fields ({{customer_no}}; a recipient without a value and no default is skipped, reason field_missing). It goes out as a WhatsApp marketing template, whose body holds at most 1024 characters together with the subject line: a longer text is refused when it is scheduled.',
  }),
  channel: Type.Optional(Type.Literal('chat')),
  header_media: Type.Optional(Nullable(HeaderMediaInput)),
})

export const UpdateBody = Type.Object({
  cta: Type.Optional(Nullable(Cta)),
  segment: Type.Optional(Nullable(Segment)),
  header_media: Type.Optional(Nullable(HeaderMediaInput)),
})

export const ScheduleBody = Type.Object({
  scheduled_at: Type.String({
    format: 'date-time',
    maxLength: 40,
    description: 'date-time with a zone, in the future and at most one year ahead',
  }),
})

export const NewsletterParams = Type.Object({ id: Type.String({ description: 'newsletter id (uuid)' }) })
export const ListQuery = Type.Object(paginationQuery({ maxLimit: 100, defaultLimit: 25, maxOffset: 100_000 }))

const newsletterFields = {
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  subject: Type.String(),
  content: Type.String(),
  channel: Type.Literal('chat'),
  status: literals(NEWSLETTER_STATUSES),
  phase: literals(NEWSLETTER_PHASES),
  cta: Nullable(Cta),
  cta_tracking: Nullable(
    literals(CTA_TRACKING),
    'how the CTA button was made when it was scheduled: tracked (a short link per recipient under HEROLD_PUBLIC_URL, clicks counted in GET /newsletters/{id}/status), or the plain CTA address and why: public_url_not_https (WhatsApp URL buttons need https), content_numbered_variables. null without a CTA or before it is scheduled',
  ),
  cta_tracking_note: Nullable(Type.String(), 'cta_tracking in words'),
  header_media: Nullable(
    Type.Object({
      media_id: Type.Optional(Type.String({ description: 'the media library file, when it is one' })),
      url: Type.String({ description: 'the https address WhatsApp fetches the image from' }),
      mime_type: Type.Optional(Type.String()),
    }),
    'the header image above the text',
  ),
  segment: Nullable(Segment),
  scheduled_at: Nullable(at, 'when it goes out (set by schedule)'),
  template_id: Nullable(Type.String({ format: 'uuid' }), 'the marketing template that carries it at the provider'),
  template_status: Nullable(
    Type.String(),
    "the template's provider status: pending, approved, rejected, … (null before it is scheduled)",
  ),
  stop_reason: Nullable(Type.String(), 'why it waits or stopped'),
  started_at: Nullable(at),
  finished_at: Nullable(at),
  created_at: at,
  updated_at: at,
}

export const Newsletter = Type.Object(newsletterFields)
export const NewsletterDetail = Type.Object({
  ...newsletterFields,
  recipients_estimate: Type.Integer({
    description: 'how many contacts the segment selects now (confirmed chat opt-in); the send takes its own snapshot',
  }),
})

export const NewsletterResponse = Type.Object({ newsletter: NewsletterDetail })
export const NewsletterPage = pageSchema('newsletters', Newsletter)
export const Deleted = Type.Object({ id: Type.String({ format: 'uuid' }), deleted: Type.Literal(true) })

const counts = {
  queued: Type.Integer({ description: 'waiting or being sent (German alias wartet)' }),
  sent: Type.Integer(),
  delivered: Type.Integer(),
  read: Type.Integer(),
  failed: Type.Integer(),
  skipped: Type.Integer(),
}
const germanCounts = {
  wartet: Type.Integer(),
  gesendet: Type.Integer(),
  zugestellt: Type.Integer(),
  gelesen: Type.Integer(),
  gescheitert: Type.Integer(),
  uebersprungen: Type.Integer(),
}

export const StatusResponse = Type.Object({
  id: Type.String({ format: 'uuid' }),
  status: literals(NEWSLETTER_STATUSES),
  phase: literals(NEWSLETTER_PHASES),
  lage: literals(NEWSLETTER_PHASES),
  recipients: Type.Integer({ description: 'send records written for it (its recipients snapshot)' }),
  counts: Type.Object({ ...counts, ...germanCounts }, { description: 'send records per status' }),
  skip_reasons: Type.Record(Type.String(), Type.Integer(), { description: 'skipped and failed sends by reason' }),
  cta_tracking: Nullable(literals(CTA_TRACKING), 'whether CTA clicks are counted (tracked), else why not'),
  cta_clicks: Type.Integer({ description: "clicks on the CTA button's tracked short links (every click)" }),
  cta_clicked_contacts: Type.Integer({ description: 'recipients who clicked the CTA at least once' }),
  daily_limit: Nullable(Type.Integer(), "the number's daily limit of new conversations; null: not limited"),
  tageslimit: Nullable(Type.Integer()),
  resumes_at: Nullable(at, 'when a waiting newsletter tries again'),
  weiter_ab: Nullable(at),
  stop_reason: Nullable(Type.String()),
  abbruch_grund: Nullable(Type.String()),
  resumable: Type.Boolean({ description: 'true while it waits for something that can change by itself' }),
  fortsetzbar: Type.Boolean(),
  can_resume: Type.Boolean({ description: 'true when it will continue without anyone acting' }),
  kann_fortsetzen: Type.Boolean(),
})

const SEND_STATUS_VALUES = ['queued', 'sending', 'sent', 'delivered', 'read', 'failed', 'skipped'] as const

export const PreviewQuery = Type.Object({
  contact_id: Type.String({ format: 'uuid', description: 'the contact the text is rendered for' }),
})

export const PreviewResponse = Type.Object({
  newsletter_id: Type.String({ format: 'uuid' }),
  contact_id: Type.String({ format: 'uuid' }),
  text: Nullable(
    Type.String(),
    'the message as this contact would get it: the subject as a bold first line, then the content, variables filled; null when a variable has no value for this contact',
  ),
  missing_variables: Type.Array(Type.String(), {
    description: 'contact variables the contact has no value for (nothing would be sent to it)',
  }),
  cta: Nullable(Cta, 'the URL button under the text'),
  header_media: Nullable(Type.Object({ url: Type.String(), media_id: Type.Optional(Type.String()) })),
  would_receive: Type.Boolean({
    description:
      "whether the contact is a recipient now: chat opt-in confirmed and selected by the newsletter's segment",
  }),
  reason: Nullable(Type.String(), 'why not: optin_not_confirmed, not_in_segment'),
})

export const EstimateBody = Type.Object({ segment: Nullable(Segment) })
export const EstimateResponse = Type.Object({
  recipients_estimate: Type.Integer({
    description: 'contacts with a confirmed chat opt-in the segment selects now; nothing is stored',
  }),
  segment: Nullable(Segment),
})

export const RecipientsQuery = Type.Object({
  status: Type.Optional(
    Type.Union(
      SEND_STATUS_VALUES.map((s) => Type.Literal(s)),
      { description: 'only send records in this status' },
    ),
  ),
  ...paginationQuery({ maxLimit: 100, defaultLimit: 25, maxOffset: 100_000 }),
})

export const Recipient = Type.Object({
  send_id: Type.String({ format: 'uuid' }),
  contact_id: Type.String({ format: 'uuid' }),
  status: literals(SEND_STATUS_VALUES),
  reason: Nullable(Type.String(), 'why it was skipped, failed or waits'),
  reason_detail: Nullable(
    Type.String(),
    'what the reason is about: for field_missing the custom fields the contact has no value for (comma-separated)',
  ),
  sent_at: Nullable(at),
  delivered_at: Nullable(at),
  read_at: Nullable(at),
  failed_at: Nullable(at),
  skipped_at: Nullable(at),
  created_at: at,
})
export const RecipientPage = pageSchema('recipients', Recipient)

export const ClicksQuery = Type.Object(paginationQuery({ maxLimit: 100, defaultLimit: 25, maxOffset: 100_000 }))
export const Click = Type.Object({
  contact_id: Type.String({ format: 'uuid' }),
  clicked_at: at,
  url: Type.String({ description: 'the CTA address the click was redirected to' }),
})
export const ClickPage = pageSchema('clicks', Click)

export const ContentBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: LIMITS.name })),
  subject: Type.Optional(Type.String({ minLength: 1, maxLength: LIMITS.subject })),
  content: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: LIMITS.content,
      description: 'the message text, as on create (at most 1024 characters with the subject line to be scheduled)',
    }),
  ),
})

export const NewsletterStatistics = Type.Object({
  newsletter_id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  status: literals(NEWSLETTER_STATUSES),
  started_at: Nullable(at),
  finished_at: Nullable(at),
  sends: SendFunnel,
  cta_tracking: Nullable(literals(CTA_TRACKING), 'whether CTA clicks are counted, else why not'),
  clicks: Type.Integer({ description: 'every click on its tracked CTA' }),
  clicked_contacts: Type.Integer({ description: 'recipients who clicked at least once' }),
  click_rate: Nullable(Type.Number(), 'clicked_contacts / delivered; null before anything was delivered'),
})

export const CheckResponse = Type.Object({
  newsletter_id: Type.String({ format: 'uuid' }),
  schedulable: Type.Boolean({
    description: 'true: the WhatsApp template check finds nothing; scheduling will submit it',
  }),
  issues: Type.Array(
    Type.Object({
      code: Type.String({ description: 'stable reason, such as content_too_long or variable_at_end' }),
      field: Type.String(),
      message: Type.String({ description: 'English' }),
    }),
    { description: 'what would refuse scheduling (400 newsletter_template_invalid)' },
  ),
  body_length: Type.Integer({ description: 'characters of the subject line and text together (WhatsApp allows 1024)' }),
  cta_tracking: Nullable(literals(CTA_TRACKING), 'how the button would be made'),
})
