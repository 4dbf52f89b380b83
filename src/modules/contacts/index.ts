import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import { contactsAppRoutes } from './contacts.app.ts'
import { contactFieldsRoutes } from './contacts.fields.routes.ts'
import { importBatchSize } from './contacts.import.ts'
import type { ContactDeletionHooks } from './contacts.ports.ts'
import { contactsRoutes } from './contacts.routes.ts'
import { type ContactsService, contactsService } from './contacts.service.ts'

/**
 * The contacts service of a process. `deletion` is what the other modules react to DELETE /contacts/{id} with, as
 * the composition root collected it: their `reactions.contactCleanup` (send jobs, conversations and messages,
 * automation runs…, counted in `removed`) and the one `reactions.deletionConfirmation` (the channels module's).
 */
export function createContactsService(
  { database, clock }: Pick<PlatformDeps, 'database' | 'clock'>,
  deletion: ContactDeletionHooks,
) {
  return contactsService({ db: database.orm, clock, deletion, importBatch: importBatchSize(database.kind) })
}

export const contactsModule: HeroldModule<{ contacts: ContactsService }> = {
  name: 'contacts',
  // the contact search's GIN indexes take steady inserts
  retention: { gin: ['contacts'] },
  tools: contactsTools,
  routes:
    (_deps, { contacts }) =>
    async (app) => {
      await contactsRoutes(contacts)(app)
      await contactFieldsRoutes(contacts)(app)
    },
  // the web app's CSV import, filters and bulk changes (/app/contacts/…)
  appRoutes:
    (_deps, { contacts }) =>
    async (app) => {
      await contactsAppRoutes(contacts)(app)
      // the settings page manages the definitions through the same routes as /v1 (settings:write by role)
      await contactFieldsRoutes(contacts, { app: true })(app)
    },
}

export { IMPORT_MAX_BYTES } from './contacts.app.schemas.ts'
export {
  type AutomationContact,
  changeContactTag,
  changeContactTags,
  contactForAutomation,
  contactsForAutomation,
} from './contacts.automation.ts'
export { consentHistory, consentSubject, recordOptinChange } from './contacts.consent.ts'
export {
  ImportError,
  type ImportReport,
  importBatchSize,
  importConcurrency,
  importContacts,
} from './contacts.import.ts'
export { contactNames, findOrCreateInboundContact, inboundContactsSql } from './contacts.inbound.ts'
export type {
  ContactCleanup,
  ContactDeletionHooks,
  ContactsTenant,
  ContactView,
  DeletionConfirmation,
} from './contacts.ports.ts'
/** The contacts the account holds, as counted against the plan's limit. */
export { contactCount, findContact } from './contacts.repository.ts'
export { normalizePhone } from './contacts.rules.ts'
export { CONTACT_EVENT_FIELDS } from './contacts.schemas.ts'
export { type ContactsService, contactsService } from './contacts.service.ts'

import { contactsTools } from './contacts.tools.ts'

export {
  assertFieldConditions,
  checkFieldConditions,
  contactMeetsFieldConditions,
  FIELD_CONDITION_OPS,
  FieldCondition,
  type FieldConditionContext,
  FieldConditions,
  fieldConditionContext,
  fieldConditionProblems,
  fieldConditionsSql,
  OPS_BY_TYPE,
  parseFieldConditionsParam,
  todayIn,
} from './contacts.field-conditions.ts'
export {
  type FieldDefinition,
  fieldDefinitionsFromJson,
  fieldDefinitionsJsonSql,
  fieldDefinitionsOf,
} from './contacts.fields-read.ts'
export type { CustomFieldType, CustomFieldValue } from './contacts.tables.ts'
