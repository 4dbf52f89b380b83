import { Type } from 'typebox'
import {
  Delay as DelaySchema,
  ListQuery,
  SendTime as SendTimeSchema,
  StepBody,
  TimingBody,
} from '../../modules/followups/followups.schemas.ts'
import { AppError } from '../../platform/http/errors.ts'
import { out } from '../outputs.ts'
import { defineTool, restRule } from '../tool.ts'
import { paging, Uuid } from './common.ts'

/** Follow-up sequences: timed chat messages after an opt-in or a tag, each step a WhatsApp template. */

const FollowupId = Uuid('the follow-up sequence id, from list_followups')
const StepId = Uuid('the step id, from get_followup (steps[].id)')
const SendTime = Type.Union([SendTimeSchema, Type.Null()], {
  description: 'HH:MM local time the step goes out at, or null for the account’s follow-up send time',
})

export const listFollowups = defineTool({
  name: 'list_followups',
  title: 'List follow-up sequences',
  description:
    'Follow-up sequences newest first: name, status (draft, active, paused), trigger (optin_confirmed or tag_added with its tag), enrolled contacts by state and the number of steps.',
  scope: 'followups:read',
  rest: 'GET /followups',
  output: out.list_followups,
  kind: 'read',
  input: Type.Object(paging(100, 25)),
  async run(ctx, args) {
    const query = restRule(ListQuery, args, 'query')
    const { items, ...page } = await ctx.services.followups.list(ctx.tenant, query)
    return { followups: items, ...page }
  },
})

export const getFollowup = defineTool({
  name: 'get_followup',
  title: 'Get a follow-up sequence',
  description:
    'One sequence with its steps: text, delay, send time, the template that carries the text and its approval (a step whose text is not approved sends nothing), and per-step counts of scheduled, queued, sent, skipped and failed messages.',
  scope: 'followups:read',
  rest: 'GET /followups/{id}',
  output: out.get_followup,
  kind: 'read',
  input: Type.Object({ followup_id: FollowupId }),
  async run(ctx, args) {
    return { followup: await ctx.services.followups.get(ctx.tenant, args.followup_id) }
  },
})

const StepInput = Type.Object(
  {
    text: Type.String({ minLength: 1, maxLength: 1024, description: 'the message text; {{name}} fills the name' }),
    delay: DelaySchema,
    send_time: Type.Optional(SendTime),
  },
  { additionalProperties: false },
)

export const createFollowup = defineTool({
  name: 'create_followup',
  title: 'Create a follow-up sequence',
  description:
    'Create a follow-up sequence as a draft: a name, the trigger that enrolls contacts (optin_confirmed, or tag_added with a tag) and 1 to 20 steps, each a text with a delay after the previous step (hours or days) and an optional send time. Each step’s text becomes a marketing template that is submitted to WhatsApp for approval; nothing is sent until activate_followup.',
  scope: 'followups:write',
  rest: 'POST /app/followups',
  output: out.create_followup,
  kind: 'write',
  openWorld: true,
  input: Type.Object({
    name: Type.String({ minLength: 1, maxLength: 200 }),
    trigger: Type.Optional(
      Type.Union(
        [
          Type.Object({ type: Type.Literal('optin_confirmed') }, { additionalProperties: false }),
          Type.Object(
            { type: Type.Literal('tag_added'), tag: Type.String({ minLength: 1, maxLength: 40 }) },
            { additionalProperties: false },
          ),
        ],
        { description: 'what enrolls a contact; default optin_confirmed' },
      ),
    ),
    steps: Type.Array(StepInput, { minItems: 1, maxItems: 20 }),
  }),
  async preview(_ctx, args) {
    return {
      action: 'create a draft follow-up sequence and submit one WhatsApp template per step for approval',
      name: args.name,
      trigger: args.trigger ?? { type: 'optin_confirmed' },
      steps: args.steps.length,
      templates_submitted: args.steps.length,
      recipients: 0,
      note: 'The sequence starts as a draft: nobody is enrolled and nothing is sent until activate_followup.',
    }
  },
  async run(ctx, args) {
    return { ok: true, followup: await ctx.services.followups.create(ctx.tenant, args) }
  },
})

export const activateFollowup = defineTool({
  name: 'activate_followup',
  title: 'Activate a follow-up sequence',
  description:
    'Set a sequence active: step templates not yet submitted are submitted to WhatsApp, and the contacts its trigger selects are scheduled (future times only); each step goes out once its template is approved. Already active: nothing changes.',
  scope: 'followups:write',
  rest: 'PATCH /followups/{id} (status active)',
  output: out.activate_followup,
  kind: 'write',
  idempotent: true,
  openWorld: true,
  input: Type.Object({ followup_id: FollowupId }),
  async preview(ctx, args) {
    const followup = await ctx.services.followups.get(ctx.tenant, args.followup_id)
    return {
      action: 'activate a follow-up sequence: its steps are scheduled for the contacts its trigger selects',
      followup: { id: followup.id, name: followup.name, status: followup.status, trigger: followup.trigger },
      steps: followup.steps.map((s) => ({ position: s.position, text: s.text, approval: s.approval })),
      enrollments: followup.enrollments,
    }
  },
  async run(ctx, args) {
    return {
      ok: true,
      followup: await ctx.services.followups.update(ctx.tenant, args.followup_id, { status: 'active' }),
    }
  },
})

export const pauseFollowup = defineTool({
  name: 'pause_followup',
  title: 'Pause a follow-up sequence',
  description:
    'Pause a sequence (status paused) or set it back to draft: every pending send of it stops at once; enrolled contacts keep their place.',
  scope: 'followups:write',
  rest: 'PATCH /followups/{id} (status paused or draft)',
  output: out.pause_followup,
  kind: 'write',
  idempotent: true,
  input: Type.Object({
    followup_id: FollowupId,
    status: Type.Optional(
      Type.Union([Type.Literal('paused'), Type.Literal('draft')], { default: 'paused', description: 'default paused' }),
    ),
  }),
  async run(ctx, args) {
    const status = args.status ?? 'paused'
    return { ok: true, followup: await ctx.services.followups.update(ctx.tenant, args.followup_id, { status }) }
  },
})

export const renameFollowup = defineTool({
  name: 'rename_followup',
  title: 'Rename a follow-up sequence',
  description: 'Change the name of a sequence; nothing else changes.',
  scope: 'followups:write',
  rest: 'PATCH /followups/{id} (name)',
  output: out.rename_followup,
  kind: 'write',
  idempotent: true,
  input: Type.Object({ followup_id: FollowupId, name: Type.String({ minLength: 1, maxLength: 200 }) }),
  async run(ctx, args) {
    return {
      ok: true,
      followup: await ctx.services.followups.update(ctx.tenant, args.followup_id, { name: args.name }),
    }
  },
})

export const updateFollowupStep = defineTool({
  name: 'update_followup_step',
  title: 'Change a follow-up step',
  description:
    'Change a step’s text, delay or send time; only given fields change. A changed text changes the step’s template, which is submitted to WhatsApp again and needs a new approval (nothing unapproved goes out); a changed delay or send time moves the scheduled times of that step.',
  scope: 'followups:write',
  rest: 'PATCH /followups/{id}/steps/{step_id}',
  output: out.update_followup_step,
  kind: 'write',
  idempotent: true,
  openWorld: true,
  input: Type.Object({
    followup_id: FollowupId,
    step_id: StepId,
    text: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    delay: Type.Optional(DelaySchema),
    send_time: Type.Optional(SendTime),
  }),
  async preview(ctx, args) {
    const { followup_id, step_id, ...change } = args
    restRule(StepBody, change, 'body')
    // the service's own rule, checked before a token is issued
    if (Object.keys(change).length === 0) throw new AppError(400, 'bad_request', 'Give text, delay or send_time')
    const followup = await ctx.services.followups.get(ctx.tenant, followup_id)
    const step = followup.steps.find((s) => s.id === step_id)
    return {
      action:
        change.text !== undefined
          ? 'change a follow-up step; the new text is submitted to WhatsApp for approval'
          : 'change when a follow-up step goes out',
      followup: { id: followup.id, name: followup.name, status: followup.status },
      step: step ? { position: step.position, text: step.text, delay: step.delay, send_time: step.send_time } : null,
      change,
      scheduled_contacts: step?.counts.scheduled ?? 0,
    }
  },
  async run(ctx, args) {
    const { followup_id, step_id, ...change } = args
    const body = restRule(StepBody, change, 'body')
    return { ok: true, followup: await ctx.services.followups.updateStep(ctx.tenant, followup_id, step_id, body) }
  },
})

export const getFollowupTiming = defineTool({
  name: 'get_followup_timing',
  title: 'Get follow-up send times',
  description:
    'The account’s follow-up send time (HH:MM, or null: steps go when their delay is over), its timezone, and the steps that have a send time of their own.',
  scope: 'settings:read',
  rest: 'GET /settings/followup-timing',
  output: out.get_followup_timing,
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    return await ctx.services.followups.timing(ctx.tenant)
  },
})

export const updateFollowupTiming = defineTool({
  name: 'update_followup_timing',
  title: 'Change follow-up send times',
  description:
    'Set the account’s follow-up send time (HH:MM or null), the timezone (IANA name such as Europe/Berlin) and per-step send times; scheduled steps move accordingly.',
  scope: 'settings:write',
  rest: 'PATCH /settings/followup-timing',
  output: out.update_followup_timing,
  kind: 'write',
  idempotent: true,
  input: Type.Object(TimingBody.properties),
  async run(ctx, args) {
    const body = restRule(TimingBody, args, 'body')
    return { ok: true, ...(await ctx.services.followups.updateTiming(ctx.tenant, body)) }
  },
})

export const followupTools = [
  listFollowups,
  getFollowup,
  createFollowup,
  activateFollowup,
  pauseFollowup,
  renameFollowup,
  updateFollowupStep,
  getFollowupTiming,
  updateFollowupTiming,
]
