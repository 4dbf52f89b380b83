import { type Static, Type } from 'typebox'
import { pageSchema, paginationQuery } from '../../platform/http/pagination.ts'
import { discriminated } from '../../platform/http/schemas.ts'
import { SendFunnel } from '../../platform/http/statistics.ts'
import { FieldCondition } from '../contacts/index.ts'

const uuid = (description: string) => Type.String({ format: 'uuid', description })
const tag = Type.String({ minLength: 1, maxLength: 40, description: 'a tag name (max 40 characters)' })

export const INTENTS = ['transactional', 'service', 'mailing_list', 'newsletter', 'reminder', 'other'] as const

export const Trigger = discriminated(
  [
    Type.Object({ type: Type.Literal('contact_created') }, { additionalProperties: false }),
    Type.Object(
      {
        type: Type.Literal('optin_confirmed'),
        channel: Type.Union([Type.Literal('chat'), Type.Literal('email')]),
      },
      { additionalProperties: false },
    ),
    Type.Object({ type: Type.Literal('tag_added'), tag }, { additionalProperties: false }),
    Type.Object(
      {
        type: Type.Literal('keyword'),
        keywords: Type.Array(Type.String({ minLength: 1, maxLength: 40 }), {
          minItems: 1,
          maxItems: 20,
          description: 'an inbound chat message containing one of them as a whole word (any case) starts a run',
        }),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      { type: Type.Literal('webhook') },
      {
        additionalProperties: false,
        description:
          'an address with a secret (GET /automation-webhooks); a JSON POST with email or phone starts a run',
      },
    ),
    Type.Object(
      {
        type: Type.Literal('calendar'),
        feed_url: Type.String({ minLength: 1, maxLength: 2000, description: 'an iCalendar (.ics) feed address' }),
        offset_minutes: Type.Optional(
          Type.Integer({
            minimum: 0,
            maximum: 43_200,
            description: 'how long before an event starts its run begins (default 1440: one day)',
          }),
        ),
        poll_minutes: Type.Optional(
          Type.Integer({ minimum: 5, maximum: 1440, description: 'how often the feed is read (default 15)' }),
        ),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      { type: Type.Literal('manual') },
      { additionalProperties: false, description: 'only POST /automations/{id}/trigger starts a run' },
    ),
  ],
  {
    description:
      'what starts a run: contact_created, optin_confirmed (chat or email), tag_added, keyword (inbound chat), webhook (an incoming address), calendar (an iCalendar feed), manual. Every active automation can also be started by POST /automations/{id}/trigger.',
  },
)
export type Trigger = Static<typeof Trigger>

const Duration = Type.Object(
  {
    minutes: Type.Optional(Type.Integer({ minimum: 0, maximum: 525_600 })),
    hours: Type.Optional(Type.Integer({ minimum: 0, maximum: 8760 })),
    days: Type.Optional(Type.Integer({ minimum: 0, maximum: 365 })),
  },
  { additionalProperties: false, description: 'a positive duration of at most a year' },
)

const Condition = discriminated(
  [
    Type.Object({ type: Type.Literal('has_tag'), tag }, { additionalProperties: false }),
    Type.Object(
      {
        type: Type.Literal('optin'),
        channel: Type.Union([Type.Literal('chat'), Type.Literal('email')]),
        state: Type.Union([
          Type.Literal('none'),
          Type.Literal('pending'),
          Type.Literal('confirmed'),
          Type.Literal('opted_out'),
        ]),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        type: Type.Literal('field'),
        field: Type.String({ minLength: 1, maxLength: 200, description: 'a dotted path into the trigger data' }),
        equals: Type.Union([Type.String({ maxLength: 1000 }), Type.Number(), Type.Boolean(), Type.Null()], {
          description: 'compared as text with the field (100 equals "100"); null matches a null field only',
        }),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      { type: Type.Literal('contact_field'), ...FieldCondition.properties },
      {
        additionalProperties: false,
        description:
          "a condition on one of the contact's custom fields, read when the step runs: {field, op, value?, days?, ignore_year?} as in newsletter segments",
      },
    ),
    Type.Object(
      { type: Type.Literal('within_opening_hours') },
      {
        additionalProperties: false,
        description:
          "the account's opening hours (the inbox's, with days off and time zone) hold when the step runs; always true while opening hours are off",
      },
    ),
  ],
  {
    description:
      "has_tag {tag}, optin {channel, state}, field {field: a dotted path into the trigger data, equals: a value}, contact_field {field: a custom field's key, op, value?, days?, ignore_year?} (the contact's custom field), or within_opening_hours {} (the business is open when the step runs)",
  },
)

const goto = Type.Union([Type.Integer({ minimum: 1, maximum: 49 }), Type.Literal('end')], {
  description: 'the index (0-based) of a later step to continue at, or end',
})

export const Step = discriminated(
  [
    Type.Object(
      {
        type: Type.Literal('send_template'),
        template_id: uuid('an approved chat template of this account'),
        variables: Type.Optional(
          Type.Record(Type.String({ maxLength: 100 }), Type.String({ maxLength: 1024 }), { maxProperties: 20 }),
        ),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        type: Type.Literal('send_text'),
        text: Type.String({ minLength: 1, maxLength: 4000, description: 'free text; only inside the 24-hour window' }),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        type: Type.Literal('wait'),
        duration: Type.Optional(Duration),
        until_time: Type.Optional(
          Type.String({
            pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$',
            description: 'HH:MM in the account timezone: wait until the next such time',
          }),
        ),
      },
      { additionalProperties: false, description: 'exactly one of duration or until_time' },
    ),
    Type.Object({ type: Type.Literal('add_tag'), tag }, { additionalProperties: false }),
    Type.Object({ type: Type.Literal('remove_tag'), tag }, { additionalProperties: false }),
    Type.Object(
      {
        type: Type.Literal('branch'),
        condition: Condition,
        then_goto: Type.Optional(goto),
        else_goto: Type.Optional(goto),
      },
      {
        additionalProperties: false,
        description: 'continues at then_goto when the condition holds, else at else_goto; default the next step',
      },
    ),
    Type.Object(
      {
        type: Type.Literal('double_optin'),
        channel: Type.Union([Type.Literal('chat'), Type.Literal('email')]),
      },
      { additionalProperties: false, description: 'starts the double opt-in (the confirmation request is sent)' },
    ),
    Type.Object(
      {
        type: Type.Literal('webhook'),
        url: Type.String({ minLength: 1, maxLength: 2048, description: 'https address; signed like event deliveries' }),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        type: Type.Literal('notify_team'),
        to: Type.Array(Type.String({ format: 'email', maxLength: 254 }), { minItems: 1, maxItems: 10 }),
        subject: Type.String({ minLength: 1, maxLength: 200 }),
        text: Type.String({ minLength: 1, maxLength: 4000 }),
      },
      { additionalProperties: false, description: 'an e-mail to people of the team, through the e-mail channel' },
    ),
    Type.Object(
      {
        type: Type.Literal('enroll_followup'),
        followup_id: uuid('a follow-up sequence of this account'),
      },
      {
        additionalProperties: false,
        description:
          'enrolls the contact in the follow-up sequence (when it is active and the contact is not already in it); its steps then go out on their own times',
      },
    ),
  ],
  { description: 'one step; see each type' },
)
export type Step = Static<typeof Step>

export const CreateAutomationBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    intent: Type.Union(
      INTENTS.map((i) => Type.Literal(i)),
      { default: 'transactional', description: 'mailing_list and newsletter always get a double opt-in step first' },
    ),
    trigger: Trigger,
    steps: Type.Array(Step, { minItems: 1, maxItems: 50 }),
  },
  { additionalProperties: false },
)

export const UpdateAutomationBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    intent: Type.Optional(Type.Union(INTENTS.map((i) => Type.Literal(i)))),
    trigger: Type.Optional(Trigger),
    steps: Type.Optional(Type.Array(Step, { minItems: 1, maxItems: 50 })),
  },
  { additionalProperties: false, minProperties: 1 },
)

export const TriggerBody = Type.Object(
  {
    contact_id: uuid('the contact the run is for'),
    data: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'trigger data for conditions' })),
  },
  { additionalProperties: false },
)

export const AutomationParams = Type.Object({ id: Type.String({ description: 'automation id (uuid)' }) })
export const RunParams = Type.Object({
  id: Type.String({ description: 'automation id (uuid)' }),
  run_id: Type.String({ description: 'run id (uuid)' }),
})
export const ListQuery = Type.Object(paginationQuery({ maxLimit: 100, defaultLimit: 25, maxOffset: 100_000 }))

const at = Type.String({ format: 'date-time' })
const nullableAt = Type.Union([at, Type.Null()])

export const Automation = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    status: Type.Union([Type.Literal('draft'), Type.Literal('active'), Type.Literal('paused')]),
    intent: Type.String(),
    trigger: Trigger,
    steps: Type.Array(Step),
    webhook_url: Type.Union([Type.String(), Type.Null()], {
      description: 'for a webhook trigger: the address to POST to (contains its secret); else null',
    }),
    notice: Type.Union([Type.String(), Type.Null()], {
      description: 'what the safety rules changed on the last create or update (alias hinweis); null when nothing',
    }),
    hinweis: Type.Union([Type.String(), Type.Null()], { description: 'deprecated German alias of notice' }),
    created_at: at,
    updated_at: at,
  },
  { title: 'Automation' },
)

export const CreatedAutomation = Type.Object(
  {
    ...Automation.properties,
    signing_secret: Type.String({
      description:
        'signs the automation’s webhook steps like event deliveries (X-Service-Signature); shown only in this response',
    }),
  },
  { title: 'CreatedAutomation' },
)

export const AutomationPage = pageSchema('automations', Automation)

const LogEntry = Type.Object({
  step: Type.Integer({ description: 'the step index (0-based)' }),
  type: Type.String(),
  at,
  result: Type.String({ description: 'done, queued, waiting, skipped, failed, sending' }),
  reason: Type.Union([Type.String(), Type.Null()]),
  detail: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
})

export const Run = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    automation_id: Type.String({ format: 'uuid' }),
    contact_id: Type.Union([Type.String({ format: 'uuid' }), Type.Null()]),
    state: Type.Union([
      Type.Literal('running'),
      Type.Literal('waiting'),
      Type.Literal('completed'),
      Type.Literal('failed'),
      Type.Literal('cancelled'),
    ]),
    source: Type.String({ description: 'event, webhook, calendar or manual' }),
    current_step: Type.Union([Type.Integer(), Type.Null()], { description: 'null once finished' }),
    wait_until: nullableAt,
    reason: Type.Union([Type.String(), Type.Null()]),
    steps: Type.Array(LogEntry),
    created_at: at,
    updated_at: at,
    finished_at: nullableAt,
  },
  { title: 'AutomationRun' },
)
export const RunPage = pageSchema('runs', Run)

export const TriggeredRun = Type.Object({ run_id: Type.String({ format: 'uuid' }), state: Type.String() })

export const AutomationWebhook = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    automation_id: Type.String({ format: 'uuid' }),
    automation_name: Type.String(),
    url: Type.Union([Type.String(), Type.Null()], {
      description: 'the address (contains its secret); null for internal',
    }),
    kind: Type.Union([Type.Literal('webhook'), Type.Literal('calendar'), Type.Literal('internal')]),
    state: Type.Union([
      Type.Literal('running'),
      Type.Literal('waiting_for_first_event'),
      Type.Literal('not_connected'),
      Type.Literal('internal'),
    ]),
    connection: Type.Record(Type.String(), Type.Unknown(), { description: 'how the source is reached' }),
    first_event_at: nullableAt,
    last_event_at: nullableAt,
    event_count: Type.Integer(),
    last_error: Type.Union([Type.String(), Type.Null()]),
    art: Type.String({ description: 'deprecated German alias of kind (webhook, kalender, intern)' }),
    zustand: Type.String({
      description: 'deprecated German alias of state (laeuft, wartet_auf_verbindung, nicht_verbunden, intern)',
    }),
    verbindung: Type.Record(Type.String(), Type.Unknown(), { description: 'deprecated German alias of connection' }),
    erstes_ereignis: Type.Union([at, Type.Null()], { description: 'deprecated German alias of first_event_at' }),
    letztes_ereignis: Type.Union([at, Type.Null()], { description: 'deprecated German alias of last_event_at' }),
    anzahl_ereignisse: Type.Integer({ description: 'deprecated German alias of event_count' }),
    letzter_fehler: Type.Union([Type.String(), Type.Null()], { description: 'deprecated German alias of last_error' }),
  },
  { title: 'AutomationWebhook' },
)
export const AutomationWebhookPage = pageSchema('automation_webhooks', AutomationWebhook)

export const AutomationStatistics = Type.Object({
  automation_id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  range: Type.String(),
  since: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'where the range begins; null: all',
  }),
  runs: Type.Object(
    {
      total: Type.Integer(),
      running: Type.Integer(),
      waiting: Type.Integer(),
      completed: Type.Integer(),
      failed: Type.Integer(),
      cancelled: Type.Integer(),
      completion_rate: Type.Union([Type.Number(), Type.Null()], {
        description: 'completed / finished runs; null while none finished',
      }),
    },
    { description: 'the runs begun in the range by their state now' },
  ),
  by_source: Type.Record(Type.String(), Type.Integer(), {
    description: 'runs by what started them: event, webhook, calendar, manual',
  }),
  failure_reasons: Type.Record(Type.String(), Type.Integer(), {
    description: 'failed and cancelled runs by reason',
  }),
  sends: SendFunnel,
})
