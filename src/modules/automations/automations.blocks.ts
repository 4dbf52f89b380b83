import { Type } from 'typebox'
import { INTENTS, Step, Trigger } from './automations.schemas.ts'

/** What each trigger and step does, in words (the schemas carry the fields and their limits). */
const TRIGGER_TEXT: Record<string, string> = {
  contact_created: 'a contact is created (API, import, inbound message, form)',
  optin_confirmed: "a contact's opt-in on the channel becomes confirmed",
  tag_added: 'the tag is added to a contact',
  keyword: 'an inbound chat message matches the keyword',
  webhook: 'a POST reaches the automation’s own incoming address (its JSON is the run’s data)',
  calendar: 'an event of an iCalendar feed starts (before or after it by the offset)',
  manual: 'only started by hand (trigger_automation) or by POST /automations/{id}/trigger',
}
const STEP_TEXT: Record<string, string> = {
  send_template: 'send an approved WhatsApp template to the contact (confirmed chat opt-in only)',
  send_text: 'send a free text (only inside the 24-hour window of the contact’s last message)',
  wait: 'wait for a duration or until a time of day',
  add_tag: 'add a tag to the contact',
  remove_tag: 'remove a tag from the contact',
  branch: 'go on at then_goto when the condition holds, else at else_goto',
  double_optin: 'start the double opt-in on a channel (the confirmation request is sent)',
  webhook: 'POST the run’s data to an https address, signed like event deliveries',
  notify_team: 'send an e-mail to people of the team',
  enroll_followup: 'enroll the contact in a follow-up sequence',
}

interface JsonSchema {
  type?: string
  const?: unknown
  description?: string
  properties?: Record<string, JsonSchema>
  required?: string[]
  oneOf?: JsonSchema[]
  anyOf?: JsonSchema[]
  minLength?: number
  maxLength?: number
  minimum?: number
  maximum?: number
}

function blocksOf(union: unknown, texts: Record<string, string>) {
  const variants = ((union as JsonSchema).oneOf ?? (union as JsonSchema).anyOf ?? []) as JsonSchema[]
  return variants.map((variant) => {
    const properties = variant.properties ?? {}
    const type = String(properties.type?.const ?? '')
    const required = new Set(variant.required ?? [])
    return {
      type,
      description: texts[type] ?? variant.description ?? type,
      fields: Object.entries(properties)
        .filter(([name]) => name !== 'type')
        .map(([name, field]) => ({
          name,
          required: required.has(name),
          description: field.description ?? null,
          schema: JSON.parse(JSON.stringify(field)) as Record<string, unknown>,
        })),
    }
  })
}

/** GET /automations/building-blocks: every trigger and step an automation can be built from, with their fields. */
export function buildingBlocks() {
  return {
    intents: [...INTENTS],
    triggers: blocksOf(Trigger, TRIGGER_TEXT),
    steps: blocksOf(Step, STEP_TEXT),
  }
}

const Block = Type.Object({
  type: Type.String(),
  description: Type.String(),
  fields: Type.Array(
    Type.Object({
      name: Type.String(),
      required: Type.Boolean(),
      description: Type.Union([Type.String(), Type.Null()]),
      schema: Type.Object({}, { additionalProperties: true, description: 'the field’s JSON Schema with its limits' }),
    }),
  ),
})

export const BuildingBlocks = Type.Object({
  intents: Type.Array(Type.String(), {
    description: 'what an automation is for; the safety rules depend on it (see create_automation)',
  }),
  triggers: Type.Array(Block, { description: 'what starts a run' }),
  steps: Type.Array(Block, { description: 'what a run does, step by step' }),
})
