import { Type } from 'typebox'
import { operationsUsing } from '../../platform/http/operation.ts'
import type { InboxServices } from './inbox.routes.ts'

/**
 * The web app's routing operations under /app (the tool server has them too, inbox.tools.ts): the automatic
 * assignment and opening-hours settings, whether the business is open now, the members' availability, and what the
 * routing did with a conversation.
 */

const tags = ['app']
const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T, description?: string) =>
  Type.Union([schema, Type.Null()], description ? { description } : {})

const Time = Type.String({
  pattern: '^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$',
  description: 'local wall-clock time HH:MM (00:00–24:00)',
})
const Range = Type.Object({ from: Time, to: Time }, { additionalProperties: false, title: 'OpeningRange' })
const DayRanges = Type.Array(Range, { maxItems: 6, description: 'the day’s opening ranges; none: closed all day' })
const days = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const
const Weekly = Type.Object(
  Object.fromEntries(days.map((d) => [d, DayRanges])) as Record<(typeof days)[number], typeof DayRanges>,
  {
    title: 'WeeklyHours',
  },
)
const WeeklyChange = Type.Partial(Weekly, { additionalProperties: false, description: 'a weekday left out is closed' })
const DayOff = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'a local date YYYY-MM-DD' })
const AssignmentMode = Type.Union([Type.Literal('off'), Type.Literal('round_robin')], {
  description: 'off (default): nobody is assigned by Herold; round_robin: a new conversation goes to the next member',
})
const Limit = Type.Integer({ minimum: 1, maximum: 1000, description: 'open conversations per member' })
const IntervalMinutes = Type.Integer({
  minimum: 1,
  maximum: 43_200,
  description: 'a conversation gets the away message at most once in this many minutes (default 720: 12 hours)',
})

export const RoutingSettings = Type.Object(
  {
    assignment: Type.Object({ mode: AssignmentMode, limit: Limit }),
    hours: Type.Object({
      enabled: Type.Boolean({ description: 'false: no opening hours, the business counts as open at all times' }),
      timezone: Type.String({ description: 'IANA time zone the hours are in' }),
      weekly: Weekly,
      days_off: Type.Array(DayOff),
    }),
    away: Type.Object({
      enabled: Type.Boolean(),
      message: Type.String(),
      interval_minutes: IntervalMinutes,
    }),
    open_now: Type.Boolean(),
    opens_at: nullable(Type.String({ format: 'date-time' }), 'when closed: the next opening (within two weeks)'),
  },
  { title: 'InboxRoutingSettings' },
)

const OpeningState = Type.Object(
  {
    hours_enabled: Type.Boolean(),
    open_now: Type.Boolean({ description: 'true also when no opening hours are set' }),
    opens_at: nullable(Type.String({ format: 'date-time' })),
    timezone: Type.String(),
    away_enabled: Type.Boolean(),
  },
  { title: 'InboxOpeningState' },
)

const MemberAvailability = Type.Object(
  {
    member_id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    email: Type.String(),
    available: Type.Boolean({ description: 'takes automatically assigned conversations' }),
    open_conversations: Type.Integer(),
    last_assigned_at: nullable(Type.String({ format: 'date-time' }), 'the last automatic assignment'),
  },
  { title: 'MemberAvailability' },
)

export const getInboxRouting = operationsUsing<InboxServices>()({
  method: 'GET',
  path: '/inbox/routing',
  mount: 'app',
  scope: 'inbox:read',
  operationId: 'getInboxRouting',
  summary: 'Automatic assignment, opening hours and the away message',
  description: 'Needs inbox:read. With whether the business is open now and, when closed, its next opening.',
  tags,
  response: RoutingSettings,
  handle: ({ inbox }, { tenant }) => inbox.routingSettings(tenant),
})

export const updateAssignmentSettings = operationsUsing<InboxServices>()({
  method: 'PATCH',
  path: '/inbox/routing/assignment',
  mount: 'app',
  scope: 'settings:write',
  operationId: 'updateAssignmentSettings',
  summary: 'Set automatic assignment',
  description:
    'Needs settings:write. mode round_robin assigns a new conversation, or a customer’s message in an unassigned one, to the available member with fewer than limit open conversations who has waited longest; with nobody free it waits in a queue handed out as members get room.',
  tags,
  body: Type.Object(
    { mode: Type.Optional(AssignmentMode), limit: Type.Optional(Limit) },
    { additionalProperties: false },
  ),
  response: RoutingSettings,
  handle: ({ inbox }, { tenant, body }) => inbox.updateAssignmentSettings(tenant, body),
})

export const updateOpeningHours = operationsUsing<InboxServices>()({
  method: 'PATCH',
  path: '/inbox/routing/hours',
  mount: 'app',
  scope: 'settings:write',
  operationId: 'updateOpeningHours',
  summary: 'Set opening hours, days off and the away message',
  description:
    'Needs settings:write. weekly replaces every weekday’s ranges (ranges must not overlap, from before to); days_off replaces the list. Outside the hours a customer’s message gets the away message once per interval_minutes (chat, a free text in the 24-hour window, through the same checks as POST /messages, stored as automated). 400 invalid_timezone, invalid_opening_hours, away_message_missing.',
  tags,
  body: Type.Object(
    {
      enabled: Type.Optional(Type.Boolean()),
      timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
      weekly: Type.Optional(WeeklyChange),
      days_off: Type.Optional(Type.Array(DayOff, { maxItems: 366 })),
      away_enabled: Type.Optional(Type.Boolean()),
      away_message: Type.Optional(Type.String({ maxLength: 4000 })),
      away_interval_minutes: Type.Optional(IntervalMinutes),
    },
    { additionalProperties: false },
  ),
  response: RoutingSettings,
  handle: ({ inbox }, { tenant, body }) => inbox.updateOpeningHours(tenant, body),
})

export const getOpeningState = operationsUsing<InboxServices>()({
  method: 'GET',
  path: '/inbox/opening-state',
  mount: 'app',
  scope: 'inbox:read',
  operationId: 'getOpeningState',
  summary: 'Whether the business is open now',
  description: 'Needs inbox:read. The inbox shows a banner while the business is closed.',
  tags,
  response: OpeningState,
  handle: ({ inbox }, { tenant }) => inbox.openingState(tenant),
})

export const listAvailability = operationsUsing<InboxServices>()({
  method: 'GET',
  path: '/inbox/availability',
  mount: 'app',
  scope: 'inbox:read',
  operationId: 'listMemberAvailability',
  summary: 'Who takes conversations now',
  description:
    'Needs inbox:read. Every active member who may answer (not viewers): available or away, open conversations, last automatic assignment; me is the calling member.',
  tags,
  response: Type.Object({ members: Type.Array(MemberAvailability), me: nullable(MemberAvailability) }),
  handle: ({ inbox }, { tenant }) => inbox.availability(tenant),
})

export const setAvailability = operationsUsing<InboxServices>()({
  method: 'PUT',
  path: '/inbox/availability',
  mount: 'app',
  scope: 'messages:write',
  operationId: 'setMemberAvailability',
  summary: 'Set a member available or away',
  description:
    'Needs messages:write. Without member_id: the calling member’s own state; another member’s needs settings:write. An available member with room takes waiting conversations at once; an away member gets no new automatic assignments. 400 member_not_active (invited or a viewer), member_id_required (a call that is no member’s own).',
  tags,
  body: Type.Object(
    {
      available: Type.Boolean(),
      member_id: Type.Optional(Type.String({ format: 'uuid', description: 'default: the calling member' })),
    },
    { additionalProperties: false },
  ),
  response: Type.Object({ member: MemberAvailability }),
  handle: async ({ inbox }, { tenant, body }) => ({
    member: await inbox.setAvailability(tenant, body.available, body.member_id),
  }),
})

export const getConversationRouting = operationsUsing<InboxServices>()({
  method: 'GET',
  path: '/conversations/{id}/routing',
  mount: 'app',
  scope: 'inbox:read',
  operationId: 'getConversationRouting',
  summary: 'What the routing did with a conversation',
  description:
    'Needs inbox:read. Its automatic assignments (to whom, why: round_robin at once, queue when a member got room; the member whose action caused it) and its away messages (queued, sent, skipped or failed with the reason), newest first.',
  tags,
  params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
  response: Type.Object({
    assignments: Type.Array(
      Type.Object({
        assignee_id: nullable(Type.String({ format: 'uuid' })),
        reason: Type.String(),
        actor_id: nullable(Type.String({ format: 'uuid' })),
        created_at: Type.String({ format: 'date-time' }),
      }),
    ),
    away_messages: Type.Array(
      Type.Object({
        state: Type.String(),
        reason: nullable(Type.String()),
        message_id: nullable(Type.String({ format: 'uuid' })),
        created_at: Type.String({ format: 'date-time' }),
      }),
    ),
  }),
  handle: ({ inbox }, { tenant, params }) => inbox.routingHistory(tenant, params.id),
})

export const routingOperations = [
  getInboxRouting,
  updateAssignmentSettings,
  updateOpeningHours,
  getOpeningState,
  listAvailability,
  setAvailability,
  getConversationRouting,
]
