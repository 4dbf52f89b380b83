import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Static } from 'typebox'
import { badRequest } from '../../platform/http/errors.ts'
import {
  FollowupPage,
  FollowupParams,
  FollowupResponse,
  ListQuery,
  STEP_FIELDS,
  StepBody,
  StepParams,
  Timing,
  TimingBody,
  UPDATE_FIELDS,
  UpdateBody,
} from './followups.schemas.ts'
import type { FollowupsService } from './followups.service.ts'

const tags = ['followups']

/** 400 for any body field the route does not change (the schema would silently drop it). */
function onlyFields(fields: string[]) {
  return async (request: FastifyRequest) => {
    const body = request.body
    if (body === null || typeof body !== 'object' || Array.isArray(body)) return
    const unknown = Object.keys(body).filter((key) => !fields.includes(key))
    if (unknown.length > 0) {
      throw badRequest(`Only ${fields.join(', ')} can be changed here; not ${unknown.join(', ')}`)
    }
  }
}

export function followupsRoutes(service: FollowupsService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get<{ Querystring: Static<typeof ListQuery> }>(
      '/followups',
      {
        config: { scope: 'followups:read' },
        schema: {
          summary: 'List follow-up sequences',
          description:
            'Newest first, with enrollment counts (active, completed, stopped) and the number of steps; GET /followups/{id} shows the steps.',
          tags,
          querystring: ListQuery,
          response: { 200: FollowupPage },
        },
      },
      async (request) => {
        const { items, ...page } = await service.list(request.tenant, request.query)
        return { followups: items, ...page }
      },
    )

    app.get<{ Params: Static<typeof FollowupParams> }>(
      '/followups/:id',
      {
        config: { scope: 'followups:read' },
        schema: {
          summary: 'A follow-up sequence with its steps',
          description:
            'Its trigger, enrollment counts (active, completed, stopped) and ordered steps: text, delay, send time, the template that carries the text at the provider with its approval state, and counts (scheduled, queued, sent, skipped, failed).',
          tags,
          params: FollowupParams,
          response: { 200: FollowupResponse },
        },
      },
      async (request) => ({ followup: await service.get(request.tenant, request.params.id) }),
    )

    app.patch<{ Params: Static<typeof FollowupParams>; Body: Static<typeof UpdateBody> }>(
      '/followups/:id',
      {
        config: { scope: 'followups:write' },
        preValidation: onlyFields(UPDATE_FIELDS),
        schema: {
          summary: 'Activate, pause or rename a follow-up sequence',
          description:
            '`status` (active, paused, draft) and `name`; any other field or a bad value is a 400. To `active`: the sequence runs, and the contacts whose chat opt-in is already confirmed (with a tag trigger: that carry the tag) are scheduled for its steps, counted from when they qualified, future times only (a step whose time for a contact has passed is not sent). To `paused` (or `draft`): every send of the sequence stops (queued step jobs and queued sends are removed, enrollments stop); reactivating continues with future times only. Creating sequences and steps is not offered here (the CLI `herold followups create` does it).',
          tags,
          params: FollowupParams,
          body: UpdateBody,
          response: { 200: FollowupResponse },
        },
      },
      async (request) => ({ followup: await service.update(request.tenant, request.params.id, request.body) }),
    )

    app.patch<{ Params: Static<typeof StepParams>; Body: Static<typeof StepBody> }>(
      '/followups/:id/steps/:step_id',
      {
        config: { scope: 'followups:write' },
        preValidation: onlyFields(STEP_FIELDS),
        schema: {
          summary: 'Edit the text, delay or send time of a step',
          description:
            "A changed text changes the step's template, which needs a new approval at the provider (it is submitted again at once when a chat number is connected): the step shows needs_approval and nothing goes out until it is approved. A changed delay or send time moves the already scheduled times of this step. 400 for a text the template check refuses (key followup_template_invalid). Creating steps is deliberately not offered.",
          tags,
          params: StepParams,
          body: StepBody,
          response: { 200: FollowupResponse },
        },
      },
      async (request) => ({
        followup: await service.updateStep(request.tenant, request.params.id, request.params.step_id, request.body),
      }),
    )

    app.get(
      '/settings/followup-timing',
      {
        config: { scope: 'settings:read' },
        schema: {
          summary: 'Follow-up timing',
          description:
            "`send_time` (HH:MM, null: no fixed time), `timezone` (the account's unless set) and the steps with their own send time.",
          tags: ['settings'],
          response: { 200: Timing },
        },
      },
      async (request) => service.timing(request.tenant),
    )

    app.patch<{ Body: Static<typeof TimingBody> }>(
      '/settings/followup-timing',
      {
        config: { scope: 'settings:write' },
        schema: {
          summary: 'Change the follow-up timing',
          description:
            "`send_time` (HH:MM or null for no fixed time), `timezone` (IANA name; an unknown one is a 400), `steps` (array of {id, send_time}: a step's own send time, null to use the account's; steps of other accounts are silently skipped). Times already scheduled move to the new setting.",
          tags: ['settings'],
          body: TimingBody,
          response: { 200: Timing },
        },
      },
      async (request) => service.updateTiming(request.tenant, request.body),
    )
  }
}
