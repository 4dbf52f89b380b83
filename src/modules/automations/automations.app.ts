import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import { buildingBlocks } from './automations.blocks.ts'
import type { AutomationsServices } from './automations.routes.ts'
import { INTENTS, Step, Trigger } from './automations.schemas.ts'
import type { AutomationsService } from './automations.service.ts'

export const CheckBody = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 200, description: 'ignored; the builder may send it along' })),
    intent: Type.Union(
      INTENTS.map((i) => Type.Literal(i)),
      { default: 'transactional' },
    ),
    trigger: Trigger,
    steps: Type.Array(Step, { minItems: 1, maxItems: 50 }),
  },
  { additionalProperties: false },
)

const operation = operationsUsing<AutomationsServices>()

const SafetyChange = Type.Union([
  Type.Object({
    kind: Type.Literal('followup_cut'),
    kept_through: Type.Integer({ description: 'the first message 24 hours or more after an earlier one (from 0)' }),
    removed_from: Type.Integer({ description: 'the first removed step (from 0)' }),
    removed_to: Type.Integer({ description: 'the last removed step (from 0)' }),
  }),
  Type.Object({
    kind: Type.Literal('double_optin_prepended'),
    channel: Type.Union([Type.Literal('chat'), Type.Literal('email')]),
  }),
])

export const CheckResponse = Type.Object({
  problems: Type.Array(Type.String(), {
    description: 'why saving would be refused (400 automation_invalid); empty when it would be accepted',
  }),
  changes: Type.Array(SafetyChange, { description: "the safety rules' changes, in the order they apply" }),
  notice: Type.Union([Type.String(), Type.Null()], { description: 'the `notice` the saved automation would carry' }),
  steps: Type.Array(Step, { description: 'the steps as they would be stored' }),
})

/** The builder's dry run of the safety rules and the validation before the member saves. */
export const checkAutomation = operation({
  method: 'POST',
  path: '/automations/check',
  mount: 'app',
  scope: 'automations:write',
  operationId: 'checkAutomation',
  summary: 'What saving an automation would change or refuse (a dry run)',
  description:
    'Runs the checks of POST /v1/automations and PATCH /v1/automations/{id} on an unsaved definition: `problems` lists every reason a save would be refused (unknown template, a wait with both or neither of duration and until_time, a branch jumping backwards, an unusable address); `changes` and `notice` say what the safety rules would change (a double opt-in step prepended for a mailing_list or newsletter intent; messages 24 hours or more apart cut off after the first such message), `steps` the steps as they would be stored. Nothing is saved. A body the schema refuses is a 400, as on save.',
  tags: ['app'],
  body: CheckBody,
  response: CheckResponse,
  handle: ({ automations }, { tenant, body }) => automations.check(tenant, body),
})

/**
 * The web app's automation routes under /app: the builder's dry run. `automations:write`, as creating and changing
 * one.
 */
export function automationAppRoutes(automations: AutomationsService) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, { automations, automationBlocks: buildingBlocks }, [checkAutomation])
  }
}
