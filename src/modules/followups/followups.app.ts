import type { FastifyInstance } from 'fastify'
import type { Static } from 'typebox'
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

/**
 * The web app's follow-up routes under /app: creating sequences and adding steps (the REST API deliberately does
 * not offer either), and the template check of a step's text as the member types. A session's role decides as its
 * scopes do on /v1: `followups:write` for every one of them.
 */
export function followupAppRoutes(service: FollowupsService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.post<{ Body: Static<typeof CreateBody> }>(
      '/followups',
      {
        config: { scope: 'followups:write' },
        schema: {
          operationId: 'createFollowup',
          summary: 'Create a follow-up sequence with its steps (a draft)',
          description:
            "Each step's text becomes a marketing template, checked and submitted at once when a chat number is connected. A text the template check refuses is a 400 (key followup_template_invalid) and nothing is stored. 1 to 20 steps.",
          tags,
          body: CreateBody,
          response: { 201: FollowupResponse },
        },
      },
      async (request, reply) => {
        const followup = await service.create(request.tenant, request.body)
        return reply.code(201).send({ followup })
      },
    )

    app.post<{ Params: Static<typeof FollowupParams>; Body: Static<typeof NewStepBody> }>(
      '/followups/:id/steps',
      {
        config: { scope: 'followups:write' },
        schema: {
          operationId: 'addFollowupStep',
          summary: 'Add a step at the end of a follow-up sequence',
          description:
            'Its template is made and submitted as on create (400 key followup_template_invalid when the check refuses the text). Contacts that completed the sequence before do not get it; active enrollments do when they reach it. At most 20 steps.',
          tags,
          params: FollowupParams,
          body: NewStepBody,
          response: { 201: FollowupResponse },
        },
      },
      async (request, reply) => {
        const followup = await service.addStep(request.tenant, request.params.id, request.body)
        return reply.code(201).send({ followup })
      },
    )

    app.post<{ Body: Static<typeof CheckBody> }>(
      '/followups/check',
      {
        config: { scope: 'followups:write' },
        schema: {
          operationId: 'checkFollowupStepText',
          summary: "The template check of a step's text",
          description:
            'The issues the template check finds in the text as a chat marketing template (the same check a create or a step change runs); an empty list when it can go out. Changes nothing.',
          tags,
          body: CheckBody,
          response: { 200: CheckResponse },
        },
      },
      async (request) => {
        const issues = stepTextIssues(request.body.text, request.tenant.account.language)
        return { issues }
      },
    )
    app.post<{ Params: Static<typeof FollowupParams> }>(
      '/followups/:id/duplicate',
      {
        config: { scope: 'followups:write' },
        schema: {
          operationId: 'duplicateFollowup',
          summary: 'Duplicate a follow-up sequence as a new draft',
          description:
            'Same trigger and steps, named "<name> (copy)"; each step gets its own new template, submitted as on create. Nobody is enrolled until it is activated.',
          tags,
          params: FollowupParams,
          response: { 201: FollowupResponse },
        },
      },
      async (request, reply) => {
        const followup = await service.duplicate(request.tenant, request.params.id)
        return reply.code(201).send({ followup })
      },
    )
  }
}
