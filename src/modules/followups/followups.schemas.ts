import { type TSchema, Type } from 'typebox'
import { pageSchema, paginationQuery } from '../../platform/http/pagination.ts'
import { SendFunnel } from '../../platform/http/statistics.ts'
import { LIMITS } from './followups.rules.ts'
import { DELAY_UNITS, ENROLLMENT_STATUSES, SEQUENCE_STATUSES } from './followups.tables.ts'

const Nullable = <T extends TSchema>(schema: T, description?: string) =>
  Type.Union([schema, Type.Null()], description ? { description } : {})
const literals = <T extends readonly string[]>(values: T) => Type.Union(values.map((v) => Type.Literal(v)))
const at = Type.String({ format: 'date-time' })
const Uuid = Type.String({ format: 'uuid' })

export const SendTime = Type.String({
  pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$',
  description: 'local time HH:MM in the follow-up timezone',
})

export const Delay = Type.Object(
  {
    amount: Type.Integer({ minimum: 0, maximum: LIMITS.hours, description: 'hours (0-8760) or days (0-365)' }),
    unit: literals(DELAY_UNITS),
  },
  {
    description:
      'after enrollment for the first step, after the previous step otherwise. Days are calendar days in the timezone (the wall clock is kept across DST changes); hours are elapsed hours.',
  },
)

export const Trigger = Type.Union(
  [
    Type.Object(
      { type: Type.Literal('optin_confirmed') },
      { description: "the contact's chat opt-in becomes confirmed" },
    ),
    Type.Object(
      { type: Type.Literal('tag_added'), tag: Type.String() },
      { description: 'the tag is added to the contact' },
    ),
  ],
  { description: 'what enrolls a contact' },
)

const counts = {
  scheduled: Type.Integer({ description: 'contacts whose next step this is' }),
  queued: Type.Integer({ description: 'send records waiting in the send pipeline (German alias wartet)' }),
  sent: Type.Integer({ description: 'sent, delivered or read (German alias gesendet)' }),
  skipped: Type.Integer({ description: 'skipped with a reason (German alias uebersprungen)' }),
  failed: Type.Integer({ description: 'failed at the provider (German alias gescheitert)' }),
  wartet: Type.Integer(),
  gesendet: Type.Integer(),
  uebersprungen: Type.Integer(),
  gescheitert: Type.Integer(),
}

export const Step = Type.Object({
  id: Uuid,
  position: Type.Integer({ minimum: 1 }),
  text: Type.String(),
  delay: Delay,
  send_time: Nullable(SendTime, "the step's own send time; null: the account's follow-up send time"),
  effective_send_time: Nullable(SendTime, 'the send time in effect for this step; null: no fixed time'),
  template_id: Nullable(Uuid, 'the marketing template that carries the text at the provider'),
  template_status: Nullable(Type.String(), "the template's provider status (null: not submitted yet)"),
  approval: Type.String({ description: 'approved, pending, rejected, paused, disabled or not_submitted' }),
  needs_approval: Type.Boolean({
    description:
      'true while the text is not approved at the provider (for example after a text change): nothing goes out',
  }),
  counts: Type.Object(counts),
})

const Enrollments = Type.Object(
  { active: Type.Integer(), completed: Type.Integer(), stopped: Type.Integer() },
  { description: 'enrolled contacts by state' },
)

const sequenceFields = {
  id: Uuid,
  name: Type.String(),
  status: literals(SEQUENCE_STATUSES),
  trigger: Trigger,
  enrollments: Enrollments,
  created_at: at,
  updated_at: at,
}

export const FollowupItem = Type.Object({ ...sequenceFields, steps_count: Type.Integer() })
export const FollowupDetail = Type.Object({ ...sequenceFields, steps: Type.Array(Step) })
export const FollowupResponse = Type.Object({ followup: FollowupDetail })
export const FollowupPage = pageSchema('followups', FollowupItem)
export const ListQuery = Type.Object(paginationQuery({ maxLimit: 100, defaultLimit: 25, maxOffset: 100_000 }))

export const FollowupParams = Type.Object({ id: Type.String({ description: 'follow-up sequence id (uuid)' }) })
export const StepParams = Type.Object({
  id: Type.String({ description: 'follow-up sequence id (uuid)' }),
  step_id: Type.String({ description: 'step id (uuid)' }),
})

export const UpdateBody = Type.Object({
  status: Type.Optional(literals(SEQUENCE_STATUSES)),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: LIMITS.name })),
})

export const StepBody = Type.Object({
  text: Type.Optional(Type.String({ minLength: 1, maxLength: LIMITS.text })),
  delay: Type.Optional(Delay),
  send_time: Type.Optional(Nullable(SendTime)),
})

export const TimingBody = Type.Object({
  send_time: Type.Optional(Nullable(SendTime, 'HH:MM, or null for no fixed time')),
  timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'IANA name such as Europe/Berlin' })),
  steps: Type.Optional(
    Type.Array(Type.Object({ id: Uuid, send_time: Nullable(SendTime) }), {
      maxItems: 500,
      description: 'per-step send times; steps of other accounts (and unknown ids) are silently skipped',
    }),
  ),
})

export const Timing = Type.Object({
  send_time: Nullable(SendTime, 'the follow-up send time; null: no fixed time (steps go when their delay is over)'),
  timezone: Type.String({ description: "the timezone of follow-up times (the account's unless set)" }),
  steps: Type.Array(Type.Object({ id: Uuid, sequence_id: Uuid, position: Type.Integer(), send_time: SendTime }), {
    description: 'steps with their own send time',
  }),
})

const NewStep = Type.Object({
  text: Type.String({
    minLength: 1,
    maxLength: LIMITS.text,
    description: 'the message; {{name}} and other contact variables',
  }),
  delay: Delay,
  send_time: Type.Optional(Nullable(SendTime)),
})
export const NewStepBody = NewStep

export const CreateBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: LIMITS.name }),
  trigger: Type.Optional(Trigger),
  steps: Type.Array(NewStep, { minItems: 1, maxItems: LIMITS.steps }),
})

export const CheckBody = Type.Object({ text: Type.String({ maxLength: 20_000 }) })
export const CheckResponse = Type.Object({
  issues: Type.Array(
    Type.Object({
      code: Type.String({ description: 'stable reason' }),
      field: Type.String(),
      message: Type.String({ description: 'English' }),
    }),
  ),
})

export const EnrollmentParams = Type.Object({
  id: Type.String({ description: 'follow-up sequence id (uuid)' }),
  enrollment_id: Type.String({ description: 'enrollment id (uuid)' }),
})

export const EnrollmentsQuery = Type.Object({
  status: Type.Optional(literals(ENROLLMENT_STATUSES)),
  contact_id: Type.Optional(Type.String({ format: 'uuid', description: "only this contact's enrollments" })),
  ...paginationQuery({ maxLimit: 100, defaultLimit: 25, maxOffset: 100_000 }),
})

export const Enrollment = Type.Object({
  id: Uuid,
  contact_id: Uuid,
  status: literals(ENROLLMENT_STATUSES),
  stop_reason: Nullable(
    Type.String(),
    'why it stopped: sequence_paused, sequence_draft, contact_opted_out, stopped_by_user, no_future_steps, …',
  ),
  next_position: Nullable(Type.Integer(), 'the step it waits for (active only)'),
  next_due_at: Nullable(at, 'when that step goes out (active only)'),
  enrolled_at: at,
  finished_at: Nullable(at),
})
export const EnrollmentPage = pageSchema('enrollments', Enrollment)
export const EnrollmentResponse = Type.Object({ enrollment: Enrollment })
export const EnrollBody = Type.Object({ contact_id: Type.String({ format: 'uuid' }) })

export const TriggerBody = Type.Object({
  trigger: Type.Object(
    {
      type: Type.Union([Type.Literal('optin_confirmed'), Type.Literal('tag_added')]),
      tag: Type.Optional(
        Type.String({ minLength: 1, maxLength: LIMITS.tag, description: 'the tag, required with tag_added' }),
      ),
    },
    {
      description:
        'what enrolls a contact: optin_confirmed (its chat opt-in becomes confirmed) or tag_added with tag (the tag is added to it)',
    },
  ),
})

export const MoveBody = Type.Object({
  position: Type.Integer({ minimum: 1, maximum: LIMITS.steps, description: 'the new position, 1 = first step' }),
})

export const FollowupStatistics = Type.Object({
  followup_id: Uuid,
  name: Type.String(),
  range: Type.String(),
  since: Nullable(at, 'where the range begins; null: all'),
  enrollments: Type.Object(
    {
      started: Type.Integer({ description: 'enrollments that began in the range' }),
      active: Type.Integer(),
      completed: Type.Integer(),
      stopped: Type.Integer(),
      completion_rate: Nullable(Type.Number(), 'completed / (completed + stopped); null while none finished'),
    },
    { description: 'the enrollments begun in the range, by their status now' },
  ),
  sends: SendFunnel,
  steps: Type.Array(Type.Object({ step_id: Uuid, position: Type.Integer(), sends: SendFunnel })),
})
