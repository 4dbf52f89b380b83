import { Type } from 'typebox'
import { requireScope } from '../../platform/auth/authenticate.ts'
import { ContactId } from '../../platform/tools/common.ts'
import { restRule, type ToolContext, toolsUsing } from '../../platform/tools/tool.ts'
import type { ContactsService } from '../contacts/index.ts'
import {
  ChannelBody,
  OptinRequestResponse,
  OptOutResponse,
  optinRequestCheck,
  recordOptOut,
  requestOptin,
} from './consent.app.ts'
import { ConsentSettings, ConsentSettingsBody } from './consent.schemas.ts'
import type { ConsentService } from './consent.service.ts'

/** The module services these tools call (the tool server hands them in). */
interface Services {
  contacts: ContactsService
  consent: ConsentService
}

const defineTool = toolsUsing<Services>()

const db = (ctx: ToolContext<Services>) => ctx.platform.database.orm

const Channel = ChannelBody.properties.channel

export const requestContactOptin = defineTool({
  name: 'request_contact_optin',
  title: 'Send a contact the double opt-in request',
  description:
    'The contact asked to receive messages: send them the double opt-in confirmation (chat: the approved opt-in confirmation template; e-mail: the confirmation link). The opt-in becomes pending; only the contact’s own confirmation makes it confirmed. Refused for a contact who opted out (409 contact_opted_out) or is confirmed already.',
  scope: 'contacts:write',
  rest: 'POST /app/contacts/{id}/optin-request',
  output: OptinRequestResponse,
  kind: 'write',
  openWorld: true,
  input: Type.Object({ contact_id: ContactId, channel: Channel }),
  async preview(ctx, args) {
    requireScope(ctx.tenant, 'messages:write')
    const { contact, address, state } = await optinRequestCheck(
      db(ctx),
      ctx.tenant.accountId,
      args.contact_id,
      args.channel,
    )
    return {
      action: `send the ${args.channel} double opt-in confirmation request`,
      to: { contact_id: contact.id, name: contact.name, address },
      recipients: 1,
      optin_now: state,
      optin_after: 'pending (confirmed only when the contact confirms)',
    }
  },
  async run(ctx, args) {
    requireScope(ctx.tenant, 'messages:write')
    return requestOptin(db(ctx), ctx.platform.clock, ctx.tenant, args.contact_id, args.channel)
  },
})

export const recordContactOptOut = defineTool({
  name: 'record_contact_opt_out',
  title: 'Record a contact’s opt-out',
  description:
    'The contact asked to stop receiving messages on a channel (by phone, letter, in person): their opt-in becomes opted_out with a consent record naming you, and nothing more is sent to them there. It cannot be undone through the API; only the contact opts in again.',
  scope: 'contacts:write',
  rest: 'POST /app/contacts/{id}/opt-out',
  output: OptOutResponse,
  kind: 'destructive',
  idempotent: true,
  input: Type.Object({ contact_id: ContactId, channel: Channel }),
  async preview(ctx, args) {
    const contact = await ctx.services.contacts.get(ctx.tenant, args.contact_id)
    const now = args.channel === 'chat' ? contact.optin_chat : contact.optin_email
    return {
      action: `record that the contact opted out of ${args.channel}: nothing more is sent there`,
      contact: { id: contact.id, name: contact.name, email: contact.email, phone: contact.phone },
      optin_now: now,
      optin_after: 'opted_out',
    }
  },
  async run(ctx, args) {
    return recordOptOut(db(ctx), ctx.platform.clock, ctx.tenant, args.contact_id, args.channel)
  },
})

export const getConsentSettings = defineTool({
  name: 'get_consent_settings',
  title: 'Consent settings',
  description:
    'The start and stop keywords of the chat double opt-in and opt-out, the stop confirmation text, the landing page consent text and address, and whether an approved opt-in confirmation template exists.',
  scope: 'settings:read',
  rest: 'GET /settings/consent',
  output: ConsentSettings,
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    return { ...(await ctx.services.consent.settings(ctx.tenant)) }
  },
})

export const updateConsentSettings = defineTool({
  name: 'update_consent_settings',
  title: 'Change the consent settings',
  description:
    'Change keywords and texts of the opt-in and opt-out; only given fields change, null restores a default. A keyword in both lists is refused. Never changes anyone’s opt-in.',
  scope: 'settings:write',
  rest: 'PATCH /settings/consent',
  output: ConsentSettings,
  kind: 'write',
  idempotent: true,
  input: Type.Object(ConsentSettingsBody.properties),
  async run(ctx, args) {
    const body = restRule(ConsentSettingsBody, args, 'body')
    return { ...(await ctx.services.consent.updateSettings(ctx.tenant, body)) }
  },
})

/** In the order the tool server lists them. */
export const consentTools = [requestContactOptin, recordContactOptOut, getConsentSettings, updateConsentSettings]
