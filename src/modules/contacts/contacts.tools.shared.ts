import { Type } from 'typebox'
import { badRequest } from '../../platform/http/errors.ts'
import { toolsUsing } from '../../platform/tools/tool.ts'
import { ContactFilterSchema } from './contacts.app.schemas.ts'
import { ContactFieldSchema, FieldValueInput } from './contacts.fields.schemas.ts'
import { isSystemTagName } from './contacts.rules.ts'
import { Contact, ContactTag, TagCount } from './contacts.schemas.ts'
import type { ContactsService } from './contacts.service.ts'

// What the contacts' tools share: their services, the schemas they name, the common arguments.

/** The module services these tools call (the tool server hands them in). */
export interface Services {
  contacts: ContactsService
}

// the schemas its routes register (app.addSchema), named with Type.Ref in the outputs
export const defineTool = toolsUsing<Services>([Contact, ContactTag, TagCount, ContactFieldSchema])

export const FieldsArgument = Type.Record(Type.String({ maxLength: 40 }), FieldValueInput, {
  maxProperties: 50,
  description:
    'custom field values by key (list_contact_fields): a string for text, choice and date (YYYY-MM-DD), a number, true/false; null clears one; keys not given stay',
})

export const Acquisition = Type.Union(
  [Type.Literal('marketing'), Type.Literal('automation'), Type.Literal('service')],
  {
    description: 'how the contact was acquired; default marketing',
  },
)

export const Filter = Type.Object(ContactFilterSchema.properties, {
  additionalProperties: false,
  description:
    'which contacts: tag (carrying it), optin_chat / optin_email (none, pending, confirmed, opted_out), source, fields (conditions on custom fields such as [{"field": "level", "op": "equals", "value": "gold"}] or [{"field": "birthday", "op": "within_next_days", "days": 7, "ignore_year": true}]); every criterion given must hold; {} is every contact',
})

export const TagName = Type.String({ minLength: 1, maxLength: 60, description: 'the tag’s name as list_tags shows it' })

export function refuseSystemTag(name: string): void {
  if (isSystemTagName(name)) {
    throw badRequest(`The system tag ${name} cannot be changed through the API`, 'system_tag', { tags: [name] })
  }
}
