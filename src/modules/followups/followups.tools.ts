import { Type } from 'typebox'
import { ContactId, Uuid } from '../../platform/tools/common.ts'
import { operationTools } from '../../platform/tools/from-operation.ts'
import type { ToolContext } from '../../platform/tools/tool.ts'
import { addFollowupStep, checkFollowupStepText, createFollowup, duplicateFollowup } from './followups.app.ts'
import * as followups from './followups.routes.ts'
import * as rules from './followups.rules.ts'

// the spec's followup_id is a uuid, where REST answers a malformed id with 404
const FollowupId = Uuid('the follow-up sequence id, from list_followups')
const tool = operationTools<followups.FollowupsServices>({ id: { name: 'followup_id', schema: FollowupId } })

const StepId = Uuid('the step id, from get_followup (steps[].id)')
const EnrollmentId = Uuid('the enrollment id, from list_followup_enrollments')

const followupOf = (ctx: ToolContext<followups.FollowupsServices>, { params }: { params: { id: string } }) =>
  ctx.services.followups.get(ctx.tenant, params.id)

export const followupsTools = [
  tool(followups.listFollowups, {
    name: 'list_followups',
    description:
      'Follow-up sequences newest first: name, status (draft, active, paused), trigger (optin_confirmed or tag_added with its tag), enrolled contacts by state and the number of steps.',
  }),
  tool(followups.getFollowup, {
    name: 'get_followup',
    title: 'Get a follow-up sequence',
    description:
      'One sequence with its steps: text, delay, send time, the template that carries the text and its approval (a step whose text is not approved sends nothing), and per-step counts of scheduled, queued, sent, skipped and failed messages.',
  }),
  tool(createFollowup, {
    name: 'create_followup',
    title: 'Create a follow-up sequence',
    description:
      'Create a follow-up sequence as a draft: a name, the trigger that enrolls contacts (optin_confirmed, or tag_added with a tag) and 1 to 20 steps, each a text with a delay after the previous step (hours or days) and an optional send time. Each step’s text becomes a marketing template that is submitted to WhatsApp for approval; nothing is sent until activate_followup.',
    describe: { trigger: 'what enrolls a contact; default optin_confirmed' },
    openWorld: true,
    ok: true,
    async preview(_ctx, { body }) {
      const { name, trigger, steps } = body
      return {
        action: 'create a draft follow-up sequence and submit one WhatsApp template per step for approval',
        name,
        trigger: trigger ?? { type: 'optin_confirmed' },
        steps: steps.length,
        templates_submitted: steps.length,
        recipients: 0,
        note: 'The sequence starts as a draft: nobody is enrolled and nothing is sent until activate_followup.',
      }
    },
  }),
  tool(followups.updateFollowup, {
    name: 'activate_followup',
    title: 'Activate a follow-up sequence',
    description:
      'Set a sequence active: step templates not yet submitted are submitted to WhatsApp, and the contacts its trigger selects are scheduled (future times only); each step goes out once its template is approved. Already active: nothing changes.',
    rest: 'PATCH /followups/{id} (status active)',
    pick: ['id'],
    fixed: { body: { status: 'active' } },
    openWorld: true,
    ok: true,
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
  tool(followups.updateFollowup, {
    name: 'pause_followup',
    title: 'Pause a follow-up sequence',
    description:
      'Pause a sequence (status paused) or set it back to draft: every pending send of it stops at once; enrolled contacts keep their place.',
    rest: 'PATCH /followups/{id} (status paused or draft)',
    pick: ['id', 'status'],
    schemas: {
      status: Type.Optional(
        Type.Union([Type.Literal('paused'), Type.Literal('draft')], {
          default: 'paused',
          description: 'default paused',
        }),
      ),
    },
    ok: true,
  }),
  tool(followups.updateFollowup, {
    name: 'rename_followup',
    title: 'Rename a follow-up sequence',
    description: 'Change the name of a sequence; nothing else changes.',
    rest: 'PATCH /followups/{id} (name)',
    pick: ['id', 'name'],
    required: ['name'],
    ok: true,
  }),
  tool(followups.updateFollowupStep, {
    name: 'update_followup_step',
    title: 'Change a follow-up step',
    description:
      'Change a step’s text, delay or send time; only given fields change. A changed text changes the step’s template, which is submitted to WhatsApp again and needs a new approval (nothing unapproved goes out); a changed delay or send time moves the scheduled times of that step.',
    schemas: { step_id: StepId },
    describe: { send_time: 'HH:MM local time the step goes out at, or null for the account’s follow-up send time' },
    openWorld: true,
    ok: true,
    async preview(ctx, call) {
      const change = call.body
      // the service's own rules, checked before a token is issued
      rules.checkStepChange(change)
      const followup = await followupOf(ctx, call)
      const step = followup.steps.find((s) => s.id === call.params.step_id)
      // a text the template check refuses is the 400 before a token is issued, as the change itself answers
      if (step && change.text !== undefined && change.text !== step.text) {
        rules.requireStepText(change.text, ctx.tenant.account.language, step.position)
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
  tool(followups.getFollowupTimingSettings, {
    name: 'get_followup_timing',
    title: 'Get follow-up send times',
    description:
      'The account’s follow-up send time (HH:MM, or null: steps go when their delay is over), its timezone, and the steps that have a send time of their own.',
  }),
  tool(followups.updateFollowupTimingSettings, {
    name: 'update_followup_timing',
    title: 'Change follow-up send times',
    description:
      'Set the account’s follow-up send time (HH:MM or null), the timezone (IANA name such as Europe/Berlin) and per-step send times; scheduled steps move accordingly.',
    ok: true,
  }),
  tool(followups.listFollowupEnrollments, {
    name: 'list_followup_enrollments',
    title: 'List a sequence’s enrolled contacts',
    description:
      'The contacts in a follow-up sequence, newest enrollment first: status (active, completed, stopped), the step an active one waits for and when it goes out, why a stopped one stopped. Filter by status or contact_id; page with limit and offset.',
    schemas: { contact_id: Type.Optional(ContactId) },
  }),
  tool(followups.enrollFollowupContact, {
    name: 'enroll_contact_in_followup',
    title: 'Enroll a contact in a follow-up sequence',
    description:
      'Put one contact into an active sequence by hand: its steps are scheduled from now (future times only) and go out as their templates are approved. The contact’s chat opt-in must be confirmed; a contact enrolled already is refused.',
    schemas: { contact_id: ContactId },
    openWorld: true,
    async preview(ctx, call) {
      const id = call.params.id
      const contactId = call.body.contact_id
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
  tool(followups.stopFollowupEnrollment, {
    name: 'stop_followup_enrollment',
    title: 'Stop a contact’s follow-up enrollment',
    description:
      'The contact gets no further step of this sequence: its pending step is removed and the enrollment stops (stop_reason stopped_by_user). The rest of the sequence runs on. A finished enrollment is answered unchanged.',
    schemas: { enrollment_id: EnrollmentId },
    idempotent: true,
  }),
  tool(duplicateFollowup, {
    name: 'duplicate_followup',
    title: 'Duplicate a follow-up sequence',
    description:
      'Copy a sequence into a new draft named "<name> (copy)" with the same trigger and steps. Each copied step gets its own marketing template, submitted to WhatsApp for approval; nobody is enrolled until activate_followup.',
    openWorld: true,
    ok: true,
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
  tool(followups.setFollowupTrigger, {
    name: 'set_followup_trigger',
    title: 'Set a follow-up sequence’s trigger',
    description:
      'Change what enrolls contacts: optin_confirmed (the chat opt-in becomes confirmed) or tag_added with a tag. Only while the sequence is draft or paused; activating it then enrolls the contacts the new trigger selects.',
    ok: true,
  }),
  tool(followups.deleteFollowupStep, {
    name: 'remove_followup_step',
    title: 'Remove a follow-up step',
    description:
      'Delete a step of a draft or paused sequence: later steps move up, contacts waiting for it get the next step, and the step’s template is deleted. The last step cannot be removed.',
    schemas: { step_id: StepId },
    ok: true,
    async preview(ctx, call) {
      const followup = await followupOf(ctx, call)
      // the service's rules, checked before a token is issued
      const step = rules.removableStep(followup.status, followup.steps, call.params.step_id)
      return {
        action: 'delete a step of a follow-up sequence and its template',
        followup: { id: followup.id, name: followup.name, status: followup.status },
        step: { position: step.position, text: step.text, delay: step.delay, counts: step.counts },
        steps_after: followup.steps.length - 1,
      }
    },
  }),
  tool(followups.moveFollowupStep, {
    name: 'move_followup_step',
    title: 'Move a follow-up step',
    description:
      'Put a step of a draft or paused sequence at another position (1 = first); the other steps keep their order and every step keeps its delay.',
    schemas: { step_id: StepId },
    idempotent: true,
    ok: true,
  }),
  tool(followups.getFollowupStatistics, {
    name: 'get_followup_statistics',
    title: 'Statistics of a follow-up sequence',
    description:
      'How one follow-up sequence performs in the last 7, 30 or 90 days (or all): enrollments begun by their status now with the completion rate, and the sends in all and per step by the furthest status reached with delivery and read rate (where contacts drop off).',
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
    describe: { text: 'the message text; {{name}} fills the name' },
    openWorld: true,
    ok: true,
    async preview(ctx, call) {
      const step = call.body
      // the service's own rules, checked before a token is issued
      rules.checkStep(step, 'step')
      const followup = await followupOf(ctx, call)
      rules.requireRoomForSteps(followup.steps.length)
      return {
        action: 'add a step to a follow-up sequence; its text is submitted to WhatsApp for approval',
        followup: { id: followup.id, name: followup.name, status: followup.status, steps: followup.steps.length },
        step,
        templates_submitted: 1,
        issues: rules.stepTextIssues(step.text, ctx.tenant.account.language),
      }
    },
  }),
]
