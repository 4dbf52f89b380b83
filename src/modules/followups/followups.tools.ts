import { Type } from 'typebox'
import { AppError } from '../../platform/http/errors.ts'
import type { AnyOperation, OperationCall } from '../../platform/http/operation.ts'
import { ContactId, Uuid } from '../../platform/tools/common.ts'
import { operationTools } from '../../platform/tools/from-operation.ts'
import { withOk } from '../../platform/tools/outputs.ts'
import type { ToolContext } from '../../platform/tools/tool.ts'
import { toolsUsing } from '../../platform/tools/tool.ts'
import { addFollowupStep, checkFollowupStepText, duplicateFollowup } from './followups.app.ts'
import {
  deleteFollowupStep,
  enrollFollowupContact,
  type FollowupsServices,
  getFollowup,
  getFollowupStatistics,
  getFollowupTimingSettings,
  listFollowupEnrollments,
  listFollowups,
  moveFollowupStep,
  setFollowupTrigger,
  stopFollowupEnrollment,
  updateFollowup,
  updateFollowupStep,
  updateFollowupTimingSettings,
} from './followups.routes.ts'
import { requireStepText, stepTextIssues } from './followups.rules.ts'
import { Delay as DelaySchema, FollowupResponse, SendTime as SendTimeSchema } from './followups.schemas.ts'
import { checkStep, LIMITS as FOLLOWUP_LIMITS } from './followups.service.ts'

// Each tool stands for an operation of followups.routes.ts or followups.app.ts: its arguments, limits, scope and
// answer are the operation's; the spec's argument names (followup_id) are mapped onto the operation's fields and the
// spec's limits kept where they differ.
const tool = operationTools<FollowupsServices>()
const defineTool = toolsUsing<FollowupsServices>()

const FollowupId = Uuid('the follow-up sequence id, from list_followups')
const StepId = Uuid('the step id, from get_followup (steps[].id)')
const EnrollmentId = Uuid('the enrollment id, from list_followup_enrollments')

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

/** the spec's tool arguments are uuids, where REST answers a malformed id with 404 */
const byFollowupId = { rename: { followup_id: 'id' }, schemas: { followup_id: FollowupId } }
const byStepId = { rename: { followup_id: 'id' }, schemas: { followup_id: FollowupId, step_id: StepId } }

/** A tool whose answer is the operation's with ok: true, as the spec's write tools answer. */
const answeredOk = (operation: AnyOperation<FollowupsServices>) => ({
  output: withOk(operation.response),
  run: async (ctx: ToolContext<FollowupsServices>, call: OperationCall) => ({
    ok: true,
    ...(await operation.handle(ctx.services, call)),
  }),
})

const followupOf = (ctx: ToolContext<FollowupsServices>, { params }: OperationCall) =>
  ctx.services.followups.get(ctx.tenant, (params as { id: string }).id)

// create_followup keeps a tool of its own: its trigger is a union of objects, which the REST rule's stripping
// validation (restRule) cannot check against the operation's schema without losing the tag
const createFollowupTool = defineTool({
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

/** In the order the tool server lists them. */
export const followupsTools = [
  tool(listFollowups, {
    name: 'list_followups',
    title: 'List follow-up sequences',
    description:
      'Follow-up sequences newest first: name, status (draft, active, paused), trigger (optin_confirmed or tag_added with its tag), enrolled contacts by state and the number of steps.',
  }),
  tool(getFollowup, {
    name: 'get_followup',
    title: 'Get a follow-up sequence',
    description:
      'One sequence with its steps: text, delay, send time, the template that carries the text and its approval (a step whose text is not approved sends nothing), and per-step counts of scheduled, queued, sent, skipped and failed messages.',
    ...byFollowupId,
  }),
  createFollowupTool,
  tool(updateFollowup, {
    name: 'activate_followup',
    title: 'Activate a follow-up sequence',
    description:
      'Set a sequence active: step templates not yet submitted are submitted to WhatsApp, and the contacts its trigger selects are scheduled (future times only); each step goes out once its template is approved. Already active: nothing changes.',
    rest: 'PATCH /followups/{id} (status active)',
    ...byFollowupId,
    pick: ['id'],
    fixed: { body: { status: 'active' } },
    openWorld: true,
    ...answeredOk(updateFollowup),
    async preview(ctx, call) {
      const followup = await followupOf(ctx, call)
      return {
        action: 'activate a follow-up sequence: its steps are scheduled for the contacts its trigger selects',
        followup: { id: followup.id, name: followup.name, status: followup.status, trigger: followup.trigger },
        steps: followup.steps.map((s) => ({ position: s.position, text: s.text, approval: s.approval })),
        enrollments: followup.enrollments,
      }
    },
  }),
  tool(updateFollowup, {
    name: 'pause_followup',
    title: 'Pause a follow-up sequence',
    description:
      'Pause a sequence (status paused) or set it back to draft: every pending send of it stops at once; enrolled contacts keep their place.',
    rest: 'PATCH /followups/{id} (status paused or draft)',
    pick: ['id', 'status'],
    rename: { followup_id: 'id' },
    schemas: {
      followup_id: FollowupId,
      status: Type.Optional(
        Type.Union([Type.Literal('paused'), Type.Literal('draft')], {
          default: 'paused',
          description: 'default paused',
        }),
      ),
    },
    ...answeredOk(updateFollowup),
  }),
  tool(updateFollowup, {
    name: 'rename_followup',
    title: 'Rename a follow-up sequence',
    description: 'Change the name of a sequence; nothing else changes.',
    rest: 'PATCH /followups/{id} (name)',
    pick: ['id', 'name'],
    ...byFollowupId,
    required: ['name'],
    ...answeredOk(updateFollowup),
  }),
  tool(updateFollowupStep, {
    name: 'update_followup_step',
    title: 'Change a follow-up step',
    description:
      'Change a step’s text, delay or send time; only given fields change. A changed text changes the step’s template, which is submitted to WhatsApp again and needs a new approval (nothing unapproved goes out); a changed delay or send time moves the scheduled times of that step.',
    rename: { followup_id: 'id' },
    schemas: {
      followup_id: FollowupId,
      step_id: StepId,
      text: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
      send_time: Type.Optional(SendTime),
    },
    openWorld: true,
    ...answeredOk(updateFollowupStep),
    async preview(ctx, call) {
      const change = call.body as { text?: string; delay?: unknown; send_time?: string | null }
      // the service's own rule, checked before a token is issued
      if (Object.keys(change).length === 0) throw new AppError(400, 'bad_request', 'Give text, delay or send_time')
      const followup = await followupOf(ctx, call)
      const step = followup.steps.find((s) => s.id === (call.params as { step_id: string }).step_id)
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
  }),
  tool(getFollowupTimingSettings, {
    name: 'get_followup_timing',
    title: 'Get follow-up send times',
    description:
      'The account’s follow-up send time (HH:MM, or null: steps go when their delay is over), its timezone, and the steps that have a send time of their own.',
  }),
  tool(updateFollowupTimingSettings, {
    name: 'update_followup_timing',
    title: 'Change follow-up send times',
    description:
      'Set the account’s follow-up send time (HH:MM or null), the timezone (IANA name such as Europe/Berlin) and per-step send times; scheduled steps move accordingly.',
    idempotent: true,
    ...answeredOk(updateFollowupTimingSettings),
  }),
  tool(listFollowupEnrollments, {
    name: 'list_followup_enrollments',
    title: 'List a sequence’s enrolled contacts',
    description:
      'The contacts in a follow-up sequence, newest enrollment first: status (active, completed, stopped), the step an active one waits for and when it goes out, why a stopped one stopped. Filter by status or contact_id; page with limit and offset.',
    rename: { followup_id: 'id' },
    schemas: { followup_id: FollowupId, contact_id: Type.Optional(ContactId) },
  }),
  tool(enrollFollowupContact, {
    name: 'enroll_contact_in_followup',
    title: 'Enroll a contact in a follow-up sequence',
    description:
      'Put one contact into an active sequence by hand: its steps are scheduled from now (future times only) and go out as their templates are approved. The contact’s chat opt-in must be confirmed; a contact enrolled already is refused.',
    rename: { followup_id: 'id' },
    schemas: { followup_id: FollowupId, contact_id: ContactId },
    openWorld: true,
    async preview(ctx, call) {
      const id = (call.params as { id: string }).id
      const contactId = (call.body as { contact_id: string }).contact_id
      const contact = await ctx.services.followups.checkEnrollment(ctx.tenant, id, contactId)
      const followup = await ctx.services.followups.get(ctx.tenant, id)
      return {
        action: 'enroll a contact in a follow-up sequence: its steps are scheduled and sent to this contact',
        followup: { id: followup.id, name: followup.name, status: followup.status },
        contact: { id: contact.contact_id, optin_chat: contact.optin_chat },
        recipients: 1,
        steps: followup.steps.map((s) => ({
          position: s.position,
          text: s.text,
          delay: s.delay,
          approval: s.approval,
        })),
      }
    },
  }),
  tool(stopFollowupEnrollment, {
    name: 'stop_followup_enrollment',
    title: 'Stop a contact’s follow-up enrollment',
    description:
      'The contact gets no further step of this sequence: its pending step is removed and the enrollment stops (stop_reason stopped_by_user). The rest of the sequence runs on. A finished enrollment is answered unchanged.',
    rename: { followup_id: 'id' },
    schemas: { followup_id: FollowupId, enrollment_id: EnrollmentId },
    idempotent: true,
  }),
  tool(duplicateFollowup, {
    name: 'duplicate_followup',
    title: 'Duplicate a follow-up sequence',
    description:
      'Copy a sequence into a new draft named "<name> (copy)" with the same trigger and steps. Each copied step gets its own marketing template, submitted to WhatsApp for approval; nobody is enrolled until activate_followup.',
    ...byFollowupId,
    openWorld: true,
    ...answeredOk(duplicateFollowup),
    async preview(ctx, call) {
      const followup = await followupOf(ctx, call)
      return {
        action: 'copy a follow-up sequence into a draft and submit one WhatsApp template per step for approval',
        followup: { id: followup.id, name: followup.name, trigger: followup.trigger },
        steps: followup.steps.length,
        templates_submitted: followup.steps.length,
        recipients: 0,
      }
    },
  }),
  tool(setFollowupTrigger, {
    name: 'set_followup_trigger',
    title: 'Set a follow-up sequence’s trigger',
    description:
      'Change what enrolls contacts: optin_confirmed (the chat opt-in becomes confirmed) or tag_added with a tag. Only while the sequence is draft or paused; activating it then enrolls the contacts the new trigger selects.',
    ...byFollowupId,
    ...answeredOk(setFollowupTrigger),
  }),
  tool(deleteFollowupStep, {
    name: 'remove_followup_step',
    title: 'Remove a follow-up step',
    description:
      'Delete a step of a draft or paused sequence: later steps move up, contacts waiting for it get the next step, and the step’s template is deleted. The last step cannot be removed.',
    ...byStepId,
    ...answeredOk(deleteFollowupStep),
    async preview(ctx, call) {
      const followup = await followupOf(ctx, call)
      const step = followup.steps.find((s) => s.id === (call.params as { step_id: string }).step_id)
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
  }),
  tool(moveFollowupStep, {
    name: 'move_followup_step',
    title: 'Move a follow-up step',
    description:
      'Put a step of a draft or paused sequence at another position (1 = first); the other steps keep their order and every step keeps its delay.',
    ...byStepId,
    idempotent: true,
    ...answeredOk(moveFollowupStep),
  }),
  tool(getFollowupStatistics, {
    name: 'get_followup_statistics',
    title: 'Statistics of a follow-up sequence',
    description:
      'How one follow-up sequence performs in the last 7, 30 or 90 days (or all): enrollments begun by their status now with the completion rate, and the sends in all and per step by the furthest status reached with delivery and read rate (where contacts drop off).',
    ...byFollowupId,
  }),
  tool(checkFollowupStepText, {
    name: 'check_followup_step_text',
    title: 'Check a follow-up step’s text',
    description:
      'The issues the template check finds in a follow-up step’s text as a chat marketing template (the check creating a sequence or changing a step runs); an empty list means it can go out. Changes nothing.',
    kind: 'read',
  }),
  tool(addFollowupStep, {
    name: 'add_followup_step',
    title: 'Add a follow-up step',
    description:
      'Add a step at the end of a follow-up sequence (at most 20): its text becomes a WhatsApp template that is submitted for approval (a text the check refuses is 400 followup_template_invalid). Active enrollments get it when they reach it; contacts that completed the sequence do not.',
    rename: { followup_id: 'id' },
    schemas: {
      followup_id: FollowupId,
      text: Type.String({ minLength: 1, maxLength: 1024, description: 'the message text; {{name}} fills the name' }),
    },
    openWorld: true,
    ...answeredOk(addFollowupStep),
    async preview(ctx, call) {
      const step = call.body as { text: string; delay: { amount: number; unit: 'hours' | 'days' } }
      // the service's own rules, checked before a token is issued
      checkStep(step, 'step')
      const followup = await followupOf(ctx, call)
      if (followup.steps.length >= FOLLOWUP_LIMITS.steps) {
        throw new AppError(400, 'bad_request', `A sequence has at most ${FOLLOWUP_LIMITS.steps} steps`)
      }
      return {
        action: 'add a step to a follow-up sequence; its text is submitted to WhatsApp for approval',
        followup: { id: followup.id, name: followup.name, status: followup.status, steps: followup.steps.length },
        step,
        templates_submitted: 1,
        issues: stepTextIssues(step.text, ctx.tenant.account.language),
      }
    },
  }),
]
