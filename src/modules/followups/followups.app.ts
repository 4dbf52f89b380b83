import type { FastifyInstance } from 'fastify'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import type { FollowupsServices } from './followups.routes.ts'
import { stepTextIssues } from './followups.rules.ts'
import {
  CheckBody,
  CheckResponse,
  CreateBody,
  FollowupParams,
  FollowupResponse,
  NewStepBody,
} from './followups.schemas.ts'
import type { FollowupsService } from './followups.service.ts'

const tags = ['app']
const operation = operationsUsing<FollowupsServices>()

export const createFollowup = operation({
  method: 'POST',
  path: '/followups',
  mount: 'app',
  scope: 'followups:write',
  operationId: 'createFollowup',
  summary: 'Create a follow-up sequence with its steps (a draft)',
  description:
    "Each step's text becomes a marketing template, checked and submitted at once when a chat number is connected. A text the template check refuses is a 400 (key followup_template_invalid) and nothing is stored. 1 to 20 steps.",
  tags,
  body: CreateBody,
  status: 201,
  response: FollowupResponse,
  handle: async ({ followups }, { tenant, body }) => ({ followup: await followups.create(tenant, body) }),
})

export const addFollowupStep = operation({
  method: 'POST',
  path: '/followups/{id}/steps',
  mount: 'app',
  scope: 'followups:write',
  operationId: 'addFollowupStep',
  summary: 'Add a step at the end of a follow-up sequence',
  description:
    'Its template is made and submitted as on create (400 key followup_template_invalid when the check refuses the text). Contacts that completed the sequence before do not get it; active enrollments do when they reach it. At most 20 steps.',
  tags,
  params: FollowupParams,
  body: NewStepBody,
  status: 201,
  response: FollowupResponse,
  handle: async ({ followups }, { tenant, params, body }) => ({
    followup: await followups.addStep(tenant, params.id, body),
  }),
})

export const checkFollowupStepText = operation({
  method: 'POST',
  path: '/followups/check',
  mount: 'app',
  scope: 'followups:write',
  operationId: 'checkFollowupStepText',
  summary: "The template check of a step's text",
  description:
    'The issues the template check finds in the text as a chat marketing template (the same check a create or a step change runs); an empty list when it can go out. Changes nothing.',
  tags,
  body: CheckBody,
  response: CheckResponse,
  handle: async (_services, { tenant, body }) => ({ issues: stepTextIssues(body.text, tenant.account.language) }),
})

export const duplicateFollowup = operation({
  method: 'POST',
  path: '/followups/{id}/duplicate',
  mount: 'app',
  scope: 'followups:write',
  operationId: 'duplicateFollowup',
  summary: 'Duplicate a follow-up sequence as a new draft',
  description:
    'Same trigger and steps, named "<name> (copy)"; each step gets its own new template, submitted as on create. Nobody is enrolled until it is activated.',
  tags,
  params: FollowupParams,
  status: 201,
  response: FollowupResponse,
  handle: async ({ followups }, { tenant, params }) => ({ followup: await followups.duplicate(tenant, params.id) }),
})

/**
 * The web app's follow-up routes under /app: creating sequences and adding steps (the REST API deliberately does
 * not offer either), and the template check of a step's text as the member types. A session's role decides as its
 * scopes do on /v1: `followups:write` for every one of them.
 */
export function followupAppRoutes(followups: FollowupsService) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, { followups }, [createFollowup, addFollowupStep, checkFollowupStepText, duplicateFollowup])
  }
}
