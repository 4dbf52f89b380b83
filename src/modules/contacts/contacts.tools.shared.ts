import { Type } from 'typebox'
import { badRequest } from '../../platform/http/errors.ts'
import { operationTools } from '../../platform/tools/from-operation.ts'
import { toolsUsing } from '../../platform/tools/tool.ts'
import { ContactFilterSchema } from './contacts.app.schemas.ts'
import { ContactFieldSchema, FieldValueInput } from './contacts.fields.schemas.ts'
import type { ContactsServices } from './contacts.routes.ts'
import { isSystemTagName } from './contacts.rules.ts'
import { Contact, ContactTag, TagCount } from './contacts.schemas.ts'

// What the contacts' tools share: the schemas they name, the common arguments.

// the schemas its routes register (app.addSchema), named with Type.Ref in the outputs
const references = [Contact, ContactTag, TagCount, ContactFieldSchema]
/**
 * A tool that stands for an operation of contacts.routes.ts, contacts.bulk.app.ts or contacts.fields.routes.ts; the
 * spec's contact_id is the operations' id.
 */
export const tool = operationTools<ContactsServices>({
  references,
  id: { name: 'contact_id', description: 'the contact id (uuid), from search_contacts or create_contact' },
})
/** A tool of its own (the CSV export and import, the consent history). */
export const defineTool = toolsUsing<ContactsServices>(references)

export const FieldsArgument = Type.Record(Type.String({ maxLength: 40 }), FieldValueInput, {
  maxProperties: 50,
  description:
    'custom field values by key (list_contact_fields): a string for text, choice and date (YYYY-MM-DD), a number, true/false; null clears one; keys not given stay',
})

/** A contact's name (never empty), and phone and e-mail where update_contact takes no null to clear them. */
export const contactArguments = {
  name: Type.String({ minLength: 1, maxLength: 120 }),
  phone: Type.String({ maxLength: 40 }),
  email: Type.String({ maxLength: 254 }),
}

export const Filter = Type.Object(ContactFilterSchema.properties, {
  additionalProperties: false,
  description:
    'which contacts: tag (carrying it), optin_chat / optin_email (none, pending, confirmed, opted_out), source, fields (conditions on custom fields such as [{"field": "level", "op": "equals", "value": "gold"}] or [{"field": "birthday", "op": "within_next_days", "days": 7, "ignore_year": true}]); every criterion given must hold; {} is every contact',
})

export const TagName = Type.String({ minLength: 1, maxLength: 60, description: 'the tag’s name as list_tags shows it' })
/** A tag a tool adds, as the API takes it. */
export const NewTag = Type.String({ minLength: 1, maxLength: 40 })

export function refuseSystemTag(name: string, change = 'changed'): void {
  if (isSystemTagName(name)) {
    throw badRequest(`The system tag ${name} cannot be ${change} through the API`, 'system_tag', { tags: [name] })
  }
}
