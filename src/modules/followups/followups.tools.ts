import { Type } from 'typebox'
import { AppError } from '../../platform/http/errors.ts'
import { StatisticsQuery } from '../../platform/http/statistics.ts'
import { ContactId, paging, StatisticsRange, Uuid } from '../../platform/tools/common.ts'
import { withOk } from '../../platform/tools/outputs.ts'
import { restRule, toolsUsing } from '../../platform/tools/tool.ts'
import { requireStepText, stepTextIssues } from './followups.rules.ts'
import {
  CheckResponse,
  Delay as DelaySchema,
  EnrollmentPage,
  EnrollmentResponse,
  EnrollmentsQuery,
  FollowupPage,
  FollowupResponse,
  FollowupStatistics,
  ListQuery,
  MoveBody,
  NewStepBody,
  SendTime as SendTimeSchema,
  StepBody,
  Timing,
  TimingBody,
  TriggerBody,
} from './followups.schemas.ts'
import type { FollowupsService } from './followups.service.ts'
import { checkStep, LIMITS as FOLLOWUP_LIMITS } from './followups.service.ts'

/** The module services these tools call (the tool server hands them in). */
interface Services {
  followups: FollowupsService
}

const defineTool = toolsUsing<Services>()

const FollowupId = Uuid('the follow-up sequence id, from list_followups')

const StepId = Uuid('the step id, from get_followup (steps[].id)')

const SendTime = Type.Union([SendTimeSchema, Type.Null()], {
  description: 'HH:MM local time the step goes out at, or null for the account’s follow-up send time',
})

const StepInput = Type.Object(
  {
    text: Type.String({ minLength: 1, maxLength: 1024, description: 'the message text; {{name}} fills the name' }),
    delay: DelaySchema,
    send_time: Type.Optional(SendTime),
  },
  { additionalProperties: false },
)

const EnrollmentId = Uuid('the enrollment id, from list_followup_enrollments')

export const listFollowups = defineTool({
  name: 'list_followups',
  title: 'List follow-up sequences',
  description:
    'Follow-up sequences newest first: name, status (draft, active, paused), trigger (optin_confirmed or tag_added with its tag), enrolled contacts by state and the number of steps.',
  scope: 'followups:read',
  rest: 'GET /followups',
  output: FollowupPage,
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
  output: FollowupResponse,
  kind: 'read',
  input: Type.Object({ followup_id: FollowupId }),
  async run(ctx, args) {
    return { followup: await ctx.services.followups.get(ctx.tenant, args.followup_id) }
  },
})

export const createFollowup = defineTool({
  name: 'create_followup',
  title: 'Create a follow-up sequence',
  description:
    'Create a follow-up sequence as a draft: a name, the trigger that enrolls contacts (optin_confirmed, or tag_added with a tag) and 1 to 20 steps, each a text with a delay after the previous step (hours or days) and an optional send time. Each step’s text becomes a marketing template that is submitted to WhatsApp for approval; nothing is sent until activate_followup.',
  scope: 'followups:write',
  rest: 'POST /app/followups',
  output: withOk(FollowupResponse),
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
  output: withOk(FollowupResponse),
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
  output: withOk(FollowupResponse),
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
  output: withOk(FollowupResponse),
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
  output: withOk(FollowupResponse),
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
    // a text the template check refuses is the 400 before a token is issued, as the change itself answers
    if (step && change.text !== undefined && change.text !== step.text) {
      requireStepText(change.text, ctx.tenant.account.language, step.position)
    }
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
  output: Timing,
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
  output: withOk(Timing),
  kind: 'write',
  idempotent: true,
  input: Type.Object(TimingBody.properties),
  async run(ctx, args) {
    const body = restRule(TimingBody, args, 'body')
    return { ok: true, ...(await ctx.services.followups.updateTiming(ctx.tenant, body)) }
  },
})

export const listFollowupEnrollments = defineTool({
  name: 'list_followup_enrollments',
  title: 'List a sequence’s enrolled contacts',
  description:
    'The contacts in a follow-up sequence, newest enrollment first: status (active, completed, stopped), the step an active one waits for and when it goes out, why a stopped one stopped. Filter by status or contact_id; page with limit and offset.',
  scope: 'followups:read',
  rest: 'GET /followups/{id}/enrollments',
  output: EnrollmentPage,
  kind: 'read',
  input: Type.Object({
    followup_id: FollowupId,
    status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('completed'), Type.Literal('stopped')])),
    contact_id: Type.Optional(ContactId),
    ...paging(100, 25),
  }),
  async run(ctx, args) {
    const { followup_id, ...rest } = args
    const query = restRule(EnrollmentsQuery, rest, 'query')
    const { items, ...page } = await ctx.services.followups.enrollments(ctx.tenant, followup_id, query)
    return { enrollments: items, ...page }
  },
})

export const enrollContactInFollowup = defineTool({
  name: 'enroll_contact_in_followup',
  title: 'Enroll a contact in a follow-up sequence',
  description:
    'Put one contact into an active sequence by hand: its steps are scheduled from now (future times only) and go out as their templates are approved. The contact’s chat opt-in must be confirmed; a contact enrolled already is refused.',
  scope: 'followups:write',
  rest: 'POST /followups/{id}/enrollments',
  output: EnrollmentResponse,
  kind: 'write',
  openWorld: true,
  input: Type.Object({ followup_id: FollowupId, contact_id: ContactId }),
  async preview(ctx, args) {
    const contact = await ctx.services.followups.checkEnrollment(ctx.tenant, args.followup_id, args.contact_id)
    const followup = await ctx.services.followups.get(ctx.tenant, args.followup_id)
    return {
      action: 'enroll a contact in a follow-up sequence: its steps are scheduled and sent to this contact',
      followup: { id: followup.id, name: followup.name, status: followup.status },
      contact: { id: contact.contact_id, optin_chat: contact.optin_chat },
      recipients: 1,
      steps: followup.steps.map((s) => ({ position: s.position, text: s.text, delay: s.delay, approval: s.approval })),
    }
  },
  async run(ctx, args) {
    return {
      enrollment: await ctx.services.followups.enroll(ctx.tenant, args.followup_id, args.contact_id),
    }
  },
})

export const stopFollowupEnrollment = defineTool({
  name: 'stop_followup_enrollment',
  title: 'Stop a contact’s follow-up enrollment',
  description:
    'The contact gets no further step of this sequence: its pending step is removed and the enrollment stops (stop_reason stopped_by_user). The rest of the sequence runs on. A finished enrollment is answered unchanged.',
  scope: 'followups:write',
  rest: 'POST /followups/{id}/enrollments/{enrollment_id}/stop',
  output: EnrollmentResponse,
  kind: 'write',
  idempotent: true,
  input: Type.Object({ followup_id: FollowupId, enrollment_id: EnrollmentId }),
  async run(ctx, args) {
    return {
      enrollment: await ctx.services.followups.stopEnrollment(ctx.tenant, args.followup_id, args.enrollment_id),
    }
  },
})

export const duplicateFollowup = defineTool({
  name: 'duplicate_followup',
  title: 'Duplicate a follow-up sequence',
  description:
    'Copy a sequence into a new draft named "<name> (copy)" with the same trigger and steps. Each copied step gets its own marketing template, submitted to WhatsApp for approval; nobody is enrolled until activate_followup.',
  scope: 'followups:write',
  rest: 'POST /app/followups/{id}/duplicate',
  output: withOk(FollowupResponse),
  kind: 'write',
  openWorld: true,
  input: Type.Object({ followup_id: FollowupId }),
  async preview(ctx, args) {
    const followup = await ctx.services.followups.get(ctx.tenant, args.followup_id)
    return {
      action: 'copy a follow-up sequence into a draft and submit one WhatsApp template per step for approval',
      followup: { id: followup.id, name: followup.name, trigger: followup.trigger },
      steps: followup.steps.length,
      templates_submitted: followup.steps.length,
      recipients: 0,
    }
  },
  async run(ctx, args) {
    return { ok: true, followup: await ctx.services.followups.duplicate(ctx.tenant, args.followup_id) }
  },
})

export const setFollowupTrigger = defineTool({
  name: 'set_followup_trigger',
  title: 'Set a follow-up sequence’s trigger',
  description:
    'Change what enrolls contacts: optin_confirmed (the chat opt-in becomes confirmed) or tag_added with a tag. Only while the sequence is draft or paused; activating it then enrolls the contacts the new trigger selects.',
  scope: 'followups:write',
  rest: 'PUT /followups/{id}/trigger',
  output: withOk(FollowupResponse),
  kind: 'write',
  idempotent: true,
  input: Type.Object({ followup_id: FollowupId, trigger: TriggerBody.properties.trigger }),
  async run(ctx, args) {
    const body = restRule(TriggerBody, { trigger: args.trigger }, 'body')
    return { ok: true, followup: await ctx.services.followups.setTrigger(ctx.tenant, args.followup_id, body.trigger) }
  },
})

export const removeFollowupStep = defineTool({
  name: 'remove_followup_step',
  title: 'Remove a follow-up step',
  description:
    'Delete a step of a draft or paused sequence: later steps move up, contacts waiting for it get the next step, and the step’s template is deleted. The last step cannot be removed.',
  scope: 'followups:write',
  rest: 'DELETE /followups/{id}/steps/{step_id}',
  output: withOk(FollowupResponse),
  kind: 'destructive',
  input: Type.Object({ followup_id: FollowupId, step_id: StepId }),
  async preview(ctx, args) {
    const followup = await ctx.services.followups.get(ctx.tenant, args.followup_id)
    const step = followup.steps.find((s) => s.id === args.step_id)
    if (!step) throw new AppError(404, 'not_found', 'follow-up step not found')
    // the service's rules, checked before a token is issued
    if (followup.status === 'active') {
      throw new AppError(409, 'followup_active', 'Pause the sequence before removing a step', {
        key: 'followup_active',
      })
    }
    if (followup.steps.length === 1) {
      throw new AppError(400, 'bad_request', 'A sequence keeps at least one step', { key: 'followup_last_step' })
    }
    return {
      action: 'delete a step of a follow-up sequence and its template',
      followup: { id: followup.id, name: followup.name, status: followup.status },
      step: { position: step.position, text: step.text, delay: step.delay, counts: step.counts },
      steps_after: followup.steps.length - 1,
    }
  },
  async run(ctx, args) {
    return { ok: true, followup: await ctx.services.followups.removeStep(ctx.tenant, args.followup_id, args.step_id) }
  },
})

export const moveFollowupStep = defineTool({
  name: 'move_followup_step',
  title: 'Move a follow-up step',
  description:
    'Put a step of a draft or paused sequence at another position (1 = first); the other steps keep their order and every step keeps its delay.',
  scope: 'followups:write',
  rest: 'POST /followups/{id}/steps/{step_id}/move',
  output: withOk(FollowupResponse),
  kind: 'write',
  idempotent: true,
  input: Type.Object({ followup_id: FollowupId, step_id: StepId, position: MoveBody.properties.position }),
  async run(ctx, args) {
    return {
      ok: true,
      followup: await ctx.services.followups.moveStep(ctx.tenant, args.followup_id, args.step_id, args.position),
    }
  },
})

export const getFollowupStatistics = defineTool({
  name: 'get_followup_statistics',
  title: 'Statistics of a follow-up sequence',
  description:
    'How one follow-up sequence performs in the last 7, 30 or 90 days (or all): enrollments begun by their status now with the completion rate, and the sends in all and per step by the furthest status reached with delivery and read rate (where contacts drop off).',
  scope: 'stats:read',
  rest: 'GET /followups/{id}/statistics',
  output: FollowupStatistics,
  kind: 'read',
  input: Type.Object({ followup_id: Uuid('the follow-up sequence id, from list_followups'), range: StatisticsRange }),
  async run(ctx, args) {
    const { range } = restRule(StatisticsQuery, { range: args.range }, 'query')
    return await ctx.services.followups.statistics(ctx.tenant, args.followup_id, range)
  },
})

export const checkFollowupStepText = defineTool({
  name: 'check_followup_step_text',
  title: 'Check a follow-up step’s text',
  description:
    'The issues the template check finds in a follow-up step’s text as a chat marketing template (the check creating a sequence or changing a step runs); an empty list means it can go out. Changes nothing.',
  scope: 'followups:write',
  rest: 'POST /app/followups/check',
  output: CheckResponse,
  kind: 'read',
  input: Type.Object({ text: Type.String({ maxLength: 20000 }) }),
  async run(ctx, args) {
    const issues = stepTextIssues(args.text, ctx.tenant.account.language)
    return { issues }
  },
})

export const addFollowupStep = defineTool({
  name: 'add_followup_step',
  title: 'Add a follow-up step',
  description:
    'Add a step at the end of a follow-up sequence (at most 20): its text becomes a WhatsApp template that is submitted for approval (a text the check refuses is 400 followup_template_invalid). Active enrollments get it when they reach it; contacts that completed the sequence do not.',
  scope: 'followups:write',
  rest: 'POST /app/followups/{id}/steps',
  output: withOk(FollowupResponse),
  kind: 'write',
  openWorld: true,
  input: Type.Object({
    followup_id: Uuid('the follow-up sequence id, from list_followups'),
    text: Type.String({ minLength: 1, maxLength: 1024, description: 'the message text; {{name}} fills the name' }),
    delay: NewStepBody.properties.delay,
    send_time: Type.Optional(NewStepBody.properties.send_time),
  }),
  async preview(ctx, args) {
    const { followup_id, ...step } = args
    restRule(NewStepBody, step, 'body')
    // the service's own rules, checked before a token is issued
    checkStep(step, 'step')
    const followup = await ctx.services.followups.get(ctx.tenant, followup_id)
    if (followup.steps.length >= FOLLOWUP_LIMITS.steps) {
      throw new AppError(400, 'bad_request', `A sequence has at most ${FOLLOWUP_LIMITS.steps} steps`)
    }
    return {
      action: 'add a step to a follow-up sequence; its text is submitted to WhatsApp for approval',
      followup: { id: followup.id, name: followup.name, status: followup.status, steps: followup.steps.length },
      step,
      templates_submitted: 1,
      issues: stepTextIssues(args.text, ctx.tenant.account.language),
    }
  },
  async run(ctx, args) {
    const { followup_id, ...step } = args
    const body = restRule(NewStepBody, step, 'body')
    return { ok: true, followup: await ctx.services.followups.addStep(ctx.tenant, followup_id, body) }
  },
})

/** In the order the tool server lists them. */
export const followupsTools = [
  listFollowups,
  getFollowup,
  createFollowup,
  activateFollowup,
  pauseFollowup,
  renameFollowup,
  updateFollowupStep,
  getFollowupTiming,
  updateFollowupTiming,
  listFollowupEnrollments,
  enrollContactInFollowup,
  stopFollowupEnrollment,
  duplicateFollowup,
  setFollowupTrigger,
  removeFollowupStep,
  moveFollowupStep,
  getFollowupStatistics,
  checkFollowupStepText,
  addFollowupStep,
]
