import { ContactId } from '../../platform/tools/common.ts'
import { operationTools } from '../../platform/tools/from-operation.ts'
import type { ContactsService } from '../contacts/index.ts'
import { optOutOperation, requestOptinOperation } from './consent.app.ts'
import type { ConsentServices } from './consent.routes.ts'
import { getConsentSettingsOperation, updateConsentSettingsOperation } from './consent.routes.ts'

const tool = operationTools<ConsentServices & { contacts: ContactsService }>({
  id: { name: 'contact_id', schema: ContactId },
})

export const consentTools = [
  tool(requestOptinOperation, {
    name: 'request_contact_optin',
    title: 'Send a contact the double opt-in request',
    description:
      'The contact asked to receive messages: send them the double opt-in confirmation (chat: the approved opt-in confirmation template; e-mail: the confirmation link). The opt-in becomes pending; only the contact’s own confirmation makes it confirmed. Refused for a contact who opted out (409 contact_opted_out) or is confirmed already.',
    openWorld: true,
    async preview({ services, tenant }, { params: { id }, body: { channel } }) {
      const { contact, address, state } = await services.consent.optinRequestCheck(tenant.accountId, id, channel)
      return {
        action: `send the ${channel} double opt-in confirmation request`,
        to: { contact_id: contact.id, name: contact.name, address },
        recipients: 1,
        optin_now: state,
        optin_after: 'pending (confirmed only when the contact confirms)',
      }
    },
  }),
  tool(optOutOperation, {
    name: 'record_contact_opt_out',
    title: 'Record a contact’s opt-out',
    description:
      'The contact asked to stop receiving messages on a channel (by phone, letter, in person): their opt-in becomes opted_out with a consent record naming you, and nothing more is sent to them there. It cannot be undone through the API; only the contact opts in again.',
    kind: 'destructive',
    idempotent: true,
    async preview({ services, tenant }, { params: { id }, body: { channel } }) {
      const contact = await services.contacts.get(tenant, id)
      const now = channel === 'chat' ? contact.optin_chat : contact.optin_email
      return {
        action: `record that the contact opted out of ${channel}: nothing more is sent there`,
        contact: { id: contact.id, name: contact.name, email: contact.email, phone: contact.phone },
        optin_now: now,
        optin_after: 'opted_out',
      }
    },
  }),
  tool(getConsentSettingsOperation, {
    name: 'get_consent_settings',
    description:
      'The start and stop keywords of the chat double opt-in and opt-out, the stop confirmation text, the landing page consent text and address, and whether an approved opt-in confirmation template exists.',
  }),
  tool(updateConsentSettingsOperation, {
    name: 'update_consent_settings',
    description:
      'Change keywords and texts of the opt-in and opt-out; only given fields change, null restores a default. A keyword in both lists is refused. Never changes anyone’s opt-in.',
  }),
]
