import type { FastifyInstance } from 'fastify'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import { namedPage } from '../../platform/http/pagination.ts'
import { StatisticsQuery } from '../../platform/http/statistics.ts'
import {
  EnrollBody,
  EnrollmentPage,
  EnrollmentParams,
  EnrollmentResponse,
  EnrollmentsQuery,
  FollowupPage,
  FollowupParams,
  FollowupResponse,
  FollowupStatistics,
  ListQuery,
  MoveBody,
  StepBody,
  StepParams,
  Timing,
  TimingBody,
  TriggerBody,
  UpdateBody,
} from './followups.schemas.ts'
import type { FollowupsService } from './followups.service.ts'

const tags = ['followups']
/** The services the follow-ups' operations call. */
export interface FollowupsServices {
  followups: FollowupsService
}

const operation = operationsUsing<FollowupsServices>()

export const listFollowups = operation({
  method: 'GET',
  path: '/followups',
  scope: 'followups:read',
  operationId: 'listFollowups',
  summary: 'List follow-up sequences',
  description:
    'Newest first, with enrollment counts (active, completed, stopped) and the number of steps; GET /followups/{id} shows the steps.',
  tags,
  query: ListQuery,
  response: FollowupPage,
  handle: async ({ followups }, { tenant, query }) => namedPage('followups', await followups.list(tenant, query)),
})

export const getFollowup = operation({
  method: 'GET',
  path: '/followups/{id}',
  scope: 'followups:read',
  operationId: 'getFollowup',
  summary: 'A follow-up sequence with its steps',
  description:
    'Its trigger, enrollment counts (active, completed, stopped) and ordered steps: text, delay, send time, the template that carries the text at the provider with its approval state, and counts (scheduled, queued, sent, skipped, failed).',
  tags,
  params: FollowupParams,
  response: FollowupResponse,
  handle: async ({ followups }, { tenant, params }) => ({ followup: await followups.get(tenant, params.id) }),
})

export const updateFollowup = operation({
  method: 'PATCH',
  path: '/followups/{id}',
  scope: 'followups:write',
  operationId: 'updateFollowup',
  summary: 'Activate, pause or rename a follow-up sequence',
  description:
    '`status` (active, paused, draft) and `name`; any other field or a bad value is a 400. To `active`: the sequence runs, and the contacts whose chat opt-in is already confirmed (with a tag trigger: that carry the tag) are scheduled for its steps, counted from when they qualified, future times only (a step whose time for a contact has passed is not sent). To `paused` (or `draft`): every send of the sequence stops (queued step jobs and queued sends are removed, enrollments stop); reactivating continues with future times only. Creating sequences and steps is not offered here (the CLI `herold followups create` does it).',
  tags,
  params: FollowupParams,
  body: UpdateBody,
  response: FollowupResponse,
  errors: {
    400: 'bad_request: nothing to change, an unknown field, or a name of the wrong length; followup_template_invalid: a step cannot go out as a WhatsApp template',
  },
  handle: async ({ followups }, { tenant, params, body }) => ({
    followup: await followups.update(tenant, params.id, body),
  }),
})

export const updateFollowupStep = operation({
  method: 'PATCH',
  path: '/followups/{id}/steps/{step_id}',
  scope: 'followups:write',
  operationId: 'updateFollowupStep',
  summary: 'Edit the text, delay or send time of a step',
  description:
    "A changed text changes the step's template, which needs a new approval at the provider (it is submitted again at once when a chat number is connected): the step shows needs_approval and nothing goes out until it is approved. A changed delay or send time moves the already scheduled times of this step. 400 for a text the template check refuses (key followup_template_invalid). Creating steps is deliberately not offered.",
  tags,
  params: StepParams,
  body: StepBody,
  response: FollowupResponse,
  errors: {
    400: 'bad_request: nothing to change, or text, delay or send_time out of range; followup_template_invalid: the step cannot go out as a WhatsApp template',
    409: "followup_active: an active sequence's steps cannot be changed this way",
  },
  handle: async ({ followups }, { tenant, params, body }) => ({
    followup: await followups.updateStep(tenant, params.id, params.step_id, body),
  }),
})

export const getFollowupTimingSettings = operation({
  method: 'GET',
  path: '/settings/followup-timing',
  scope: 'settings:read',
  operationId: 'getFollowupTimingSettings',
  summary: 'Follow-up timing',
  description:
    "`send_time` (HH:MM, null: no fixed time), `timezone` (the account's unless set) and the steps with their own send time.",
  tags: ['settings'],
  response: Timing,
  handle: ({ followups }, { tenant }) => followups.timing(tenant),
})

export const updateFollowupTimingSettings = operation({
  method: 'PATCH',
  path: '/settings/followup-timing',
  scope: 'settings:write',
  operationId: 'updateFollowupTimingSettings',
  summary: 'Change the follow-up timing',
  description:
    "`send_time` (HH:MM or null for no fixed time), `timezone` (IANA name; an unknown one is a 400), `steps` (array of {id, send_time}: a step's own send time, null to use the account's; steps of other accounts are silently skipped). Times already scheduled move to the new setting.",
  tags: ['settings'],
  body: TimingBody,
  response: Timing,
  errors: { 400: 'bad_request: timezone is not an IANA name, or a time is not HH:MM' },
  handle: ({ followups }, { tenant, body }) => followups.updateTiming(tenant, body),
})

export const listFollowupEnrollments = operation({
  method: 'GET',
  path: '/followups/{id}/enrollments',
  scope: 'followups:read',
  operationId: 'listFollowupEnrollments',
  summary: "A sequence's enrolled contacts",
  description:
    'Newest enrollment first, optionally by status (active, completed, stopped) or contact: the step each active one waits for and when it goes out, why a stopped one stopped.',
  tags,
  params: FollowupParams,
  query: EnrollmentsQuery,
  response: EnrollmentPage,
  handle: async ({ followups }, { tenant, params, query }) =>
    namedPage('enrollments', await followups.enrollments(tenant, params.id, query)),
})

export const enrollFollowupContact = operation({
  method: 'POST',
  path: '/followups/{id}/enrollments',
  scope: 'followups:write',
  operationId: 'enrollFollowupContact',
  summary: 'Enroll a contact in a sequence by hand',
  description:
    "Its first step is counted from now (future times only). The contact's chat opt-in must be confirmed (400 key followup_contact_not_confirmed); the sequence must be active (409 key followup_not_active); a contact enrolled in it already is a 409 (key followup_already_enrolled). Another account's contact is a 404.",
  tags,
  params: FollowupParams,
  body: EnrollBody,
  status: 201,
  response: EnrollmentResponse,
  errors: {
    400: "followup_contact_not_confirmed: only a contact whose chat opt-in is confirmed can be enrolled; followup_no_steps: no step's time lies ahead",
    404: 'not_found: the sequence or the contact is missing or belongs to another account',
    409: 'followup_not_active: the sequence is not active; followup_already_enrolled: the contact is enrolled already',
  },
  handle: async ({ followups }, { tenant, params, body }) => ({
    enrollment: await followups.enroll(tenant, params.id, body.contact_id),
  }),
})

export const stopFollowupEnrollment = operation({
  method: 'POST',
  path: '/followups/{id}/enrollments/{enrollment_id}/stop',
  scope: 'followups:write',
  operationId: 'stopFollowupEnrollment',
  summary: "Stop one contact's enrollment",
  description:
    'The contact gets no further step of this sequence (its pending step is removed; stop_reason stopped_by_user). A finished enrollment is answered as it is.',
  tags,
  params: EnrollmentParams,
  response: EnrollmentResponse,
  handle: async ({ followups }, { tenant, params }) => ({
    enrollment: await followups.stopEnrollment(tenant, params.id, params.enrollment_id),
  }),
})

export const setFollowupTrigger = operation({
  method: 'PUT',
  path: '/followups/{id}/trigger',
  scope: 'followups:write',
  operationId: 'setFollowupTrigger',
  summary: "Set a sequence's trigger",
  description:
    'optin_confirmed, or tag_added with a tag (1-40). Only while the sequence is draft or paused (409 key followup_active); activating it then enrolls the contacts the new trigger selects.',
  tags,
  params: FollowupParams,
  body: TriggerBody,
  response: FollowupResponse,
  errors: {
    400: 'bad_request: trigger.type or trigger.tag invalid',
    409: 'followup_active: pause the sequence first',
  },
  handle: async ({ followups }, { tenant, params, body }) => ({
    followup: await followups.setTrigger(tenant, params.id, body.trigger),
  }),
})

export const deleteFollowupStep = operation({
  method: 'DELETE',
  path: '/followups/{id}/steps/{step_id}',
  scope: 'followups:write',
  operationId: 'deleteFollowupStep',
  summary: 'Remove a step',
  description:
    "Only while the sequence is draft or paused (409 key followup_active); the last step cannot be removed (400 key followup_last_step). Later steps move up; contacts waiting for it get the next step; the step's template is deleted.",
  tags,
  params: StepParams,
  response: FollowupResponse,
  errors: {
    400: 'followup_last_step: a sequence keeps at least one step',
    409: 'followup_active: pause the sequence first',
  },
  handle: async ({ followups }, { tenant, params }) => ({
    followup: await followups.removeStep(tenant, params.id, params.step_id),
  }),
})

export const moveFollowupStep = operation({
  method: 'POST',
  path: '/followups/{id}/steps/{step_id}/move',
  scope: 'followups:write',
  operationId: 'moveFollowupStep',
  summary: 'Move a step to another position',
  description:
    'Only while the sequence is draft or paused (409 key followup_active). The other steps keep their order; delays stay with their steps. A position beyond the number of steps is a 400.',
  tags,
  params: StepParams,
  body: MoveBody,
  response: FollowupResponse,
  errors: {
    400: 'bad_request: position out of range',
    409: 'followup_active: pause the sequence first',
  },
  handle: async ({ followups }, { tenant, params, body }) => ({
    followup: await followups.moveStep(tenant, params.id, params.step_id, body.position),
  }),
})

export const getFollowupStatistics = operation({
  method: 'GET',
  path: '/followups/{id}/statistics',
  scope: 'stats:read',
  operationId: 'getFollowupStatistics',
  summary: "A follow-up sequence's statistics",
  description:
    'For the range (7d, 30d, 90d: 24-hour periods up to now; all): the enrollments begun in it by their status now with the completion rate, and the sends in it, in all and per step, by the furthest status they reached with delivery and read rate. Scope stats:read.',
  tags,
  params: FollowupParams,
  query: StatisticsQuery,
  response: FollowupStatistics,
  handle: ({ followups }, { tenant, params, query }) => followups.statistics(tenant, params.id, query.range),
})

export function followupsRoutes(followups: FollowupsService) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, { followups }, [
      listFollowups,
      getFollowup,
      updateFollowup,
      updateFollowupStep,
      getFollowupTimingSettings,
      updateFollowupTimingSettings,
      listFollowupEnrollments,
      enrollFollowupContact,
      stopFollowupEnrollment,
      setFollowupTrigger,
      deleteFollowupStep,
      moveFollowupStep,
      getFollowupStatistics,
    ])
  }
}
