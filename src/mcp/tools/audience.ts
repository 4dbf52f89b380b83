import { Type } from 'typebox'
import { ChannelBody, optinRequestCheck, recordOptOut, requestOptin } from '../../modules/consent/consent.app.ts'
import { ContactFilterSchema, RenameTagBody, TagParams } from '../../modules/contacts/contacts.app.ts'
import {
  BULK_DELETE_MAX,
  contactsWithTag,
  countMatching,
  deleteMatching,
  deleteTag,
  exportCsv,
  getTag,
  hasCriterion,
  lookupContact,
  renameTag,
  tagMatching,
  untagMatching,
} from '../../modules/contacts/contacts.bulk.ts'
import { isSystemTagName } from '../../modules/contacts/contacts.rules.ts'
import { requireScope } from '../../platform/auth/authenticate.ts'
import { badRequest, notFound } from '../../platform/http/errors.ts'
import { out } from '../outputs.ts'
import { defineTool, restRule, type ToolContext } from '../tool.ts'
import { ContactId } from './common.ts'

/**
 * The audience beyond single contacts: looking a contact up by address, counting and exporting contacts by filter,
 * tags account-wide, bulk tagging and deleting, and a person acting on a contact's consent (the opt-in request they
 * asked for, the opt-out they asked for). The same module functions as the web app's /app routes.
 */

const db = (ctx: ToolContext) => ctx.platform.database.orm
const Filter = Type.Object(ContactFilterSchema.properties, {
  additionalProperties: false,
  description:
    'which contacts: tag (carrying it), optin_chat / optin_email (none, pending, confirmed, opted_out), source; every criterion given must hold; {} is every contact',
})
const TagName = Type.String({ minLength: 1, maxLength: 60, description: 'the tag’s name as list_tags shows it' })
const Channel = ChannelBody.properties.channel

function refuseSystemTag(name: string): void {
  if (isSystemTagName(name)) {
    throw badRequest(`The system tag ${name} cannot be changed through the API`, 'system_tag', { tags: [name] })
  }
}

export const findContact = defineTool({
  name: 'find_contact',
  title: 'Find a contact by e-mail or phone',
  description:
    'The contact holding exactly this e-mail address or phone number (any phone format in international form, e.g. +49 151 2345678); 404 not_found when nobody has it. Unlike search_contacts it never answers a partial match.',
  scope: 'contacts:read',
  rest: 'GET /app/contacts/lookup',
  output: out.find_contact,
  kind: 'read',
  input: Type.Object({
    address: Type.String({
      minLength: 3,
      maxLength: 254,
      description: 'an e-mail address, or a phone number in international format',
    }),
  }),
  async run(ctx, args) {
    const address = args.address.trim()
    const lookup = address.includes('@') ? { email: address } : { phone: address }
    return { contact: await lookupContact(db(ctx), ctx.tenant.accountId, lookup) }
  },
})

export const countContacts = defineTool({
  name: 'count_contacts',
  title: 'Count contacts by filter',
  description:
    'How many contacts match: by tag, chat or e-mail opt-in state and source, every contact counted (e.g. how many have a confirmed chat opt-in and carry the tag vip). {} counts all.',
  scope: 'contacts:read',
  rest: 'GET /app/contacts/count',
  output: out.count_contacts,
  kind: 'read',
  input: Type.Object({ filter: Type.Optional(Filter) }),
  async run(ctx, args) {
    return { matching: await countMatching(db(ctx), ctx.tenant.accountId, args.filter ?? {}) }
  },
})

export const exportContactsCsv = defineTool({
  name: 'export_contacts_csv',
  title: 'Export contacts as CSV',
  description:
    'The matching contacts as CSV text (header id, name, email, phone, optin_chat, optin_email, tags separated by ;, language, source, created_at), oldest first, at most 2000 rows per call: page with offset while has_more. import_contacts_csv reads the same columns.',
  scope: 'contacts:read',
  rest: 'GET /app/contacts/export',
  output: out.export_contacts_csv,
  kind: 'read',
  input: Type.Object({
    filter: Type.Optional(Filter),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 2000, default: 500 })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000_000, default: 0 })),
  }),
  async run(ctx, args) {
    return exportCsv(db(ctx), ctx.tenant.accountId, args.filter ?? {}, {
      limit: args.limit ?? 500,
      offset: args.offset ?? 0,
    })
  },
})

export const getTagTool = defineTool({
  name: 'get_tag',
  title: 'One tag with its contact count',
  description:
    'How many contacts carry a tag (every contact counted, unlike the sample of list_tags), under which origins (system, ki, manuell), and whether it is a system tag that cannot be changed. 404 when no contact has it.',
  scope: 'contacts:read',
  rest: 'GET /app/tags/{tag}',
  output: out.get_tag,
  kind: 'read',
  input: Type.Object({ tag: TagName }),
  async run(ctx, args) {
    return { tag: await getTag(db(ctx), ctx.tenant.accountId, args.tag) }
  },
})

export const renameTagTool = defineTool({
  name: 'rename_tag',
  title: 'Rename a tag on every contact',
  description:
    'Rename a tag on every contact that carries it, keeping each one’s origin; a contact with both names keeps one. System tags cannot be renamed or made (400 system_tag); the new name is at most 40 characters.',
  scope: 'contacts:write',
  rest: 'POST /app/tags/{tag}/rename',
  output: out.rename_tag,
  kind: 'write',
  input: Type.Object({ tag: TagName, new_name: Type.String({ minLength: 1, maxLength: 40 }) }),
  async preview(ctx, args) {
    restRule(RenameTagBody, { new_name: args.new_name }, 'body')
    refuseSystemTag(args.tag)
    refuseSystemTag(args.new_name)
    const contacts = await contactsWithTag(db(ctx), ctx.tenant.accountId, args.tag.trim())
    if (contacts === 0) throw notFound('tag')
    return { action: `rename the tag ${args.tag} to ${args.new_name} on every contact`, contacts }
  },
  async run(ctx, args) {
    restRule(TagParams, { tag: args.tag }, 'path')
    return renameTag(db(ctx), ctx.tenant.accountId, args.tag, args.new_name)
  },
})

export const deleteTagTool = defineTool({
  name: 'delete_tag',
  title: 'Delete a tag from every contact',
  description:
    'Remove a tag from every contact that carries it (the contacts stay). Automations and newsletter segments that use the tag no longer match anyone. System tags cannot be deleted (400 system_tag).',
  scope: 'contacts:write',
  rest: 'DELETE /app/tags/{tag}',
  output: out.delete_tag,
  kind: 'destructive',
  input: Type.Object({ tag: TagName }),
  async preview(ctx, args) {
    refuseSystemTag(args.tag)
    const contacts = await contactsWithTag(db(ctx), ctx.tenant.accountId, args.tag.trim())
    if (contacts === 0) throw notFound('tag')
    return { action: `remove the tag ${args.tag} from every contact`, contacts }
  },
  async run(ctx, args) {
    return deleteTag(db(ctx), ctx.tenant.accountId, args.tag)
  },
})

export const tagContacts = defineTool({
  name: 'tag_contacts',
  title: 'Tag every matching contact',
  description:
    'Add a tag (origin manuell, at most 40 characters, never a system tag) to every contact matching the filter, at most 10,000 per call (has_more: call again); contacts with 30 tags are skipped. Automations waiting for the tag start for each newly tagged contact.',
  scope: 'contacts:write',
  rest: 'POST /app/contacts/bulk/tag',
  output: out.tag_contacts,
  kind: 'write',
  idempotent: true,
  input: Type.Object({ filter: Filter, tag: Type.String({ minLength: 1, maxLength: 40 }) }),
  async preview(ctx, args) {
    refuseSystemTag(args.tag)
    const matching = await countMatching(db(ctx), ctx.tenant.accountId, args.filter)
    return { action: `add the tag ${args.tag} to every matching contact`, filter: args.filter, contacts: matching }
  },
  async run(ctx, args) {
    return tagMatching(db(ctx), ctx.platform.clock, ctx.tenant.accountId, args.filter, args.tag)
  },
})

export const untagContacts = defineTool({
  name: 'untag_contacts',
  title: 'Remove a tag from every matching contact',
  description:
    'Remove a tag from every contact matching the filter that carries it (never a system tag). To remove a tag from all contacts, delete_tag does the same with the tag alone.',
  scope: 'contacts:write',
  rest: 'POST /app/contacts/bulk/untag',
  output: out.untag_contacts,
  kind: 'destructive',
  idempotent: true,
  input: Type.Object({ filter: Filter, tag: Type.String({ minLength: 1, maxLength: 40 }) }),
  async preview(ctx, args) {
    refuseSystemTag(args.tag)
    const matching = await countMatching(db(ctx), ctx.tenant.accountId, { ...args.filter, tag: args.tag })
    return { action: `remove the tag ${args.tag} from the matching contacts`, filter: args.filter, contacts: matching }
  },
  async run(ctx, args) {
    return untagMatching(db(ctx), ctx.tenant.accountId, args.filter, args.tag)
  },
})

export const deleteContacts = defineTool({
  name: 'delete_contacts',
  title: 'Delete every matching contact',
  description: `Permanently delete the contacts matching the filter (at least one criterion), each as delete_contact deletes one: conversations, messages, pending sends and automation runs removed, consent records anonymized. At most ${BULK_DELETE_MAX} per call (has_more: call again).`,
  scope: 'contacts:delete',
  rest: 'POST /app/contacts/bulk/delete',
  output: out.delete_contacts,
  kind: 'destructive',
  input: Type.Object({ filter: Filter }),
  async preview(ctx, args) {
    if (!hasCriterion(args.filter)) throw badRequest('Give at least one filter criterion', 'filter_required')
    const matching = await countMatching(db(ctx), ctx.tenant.accountId, args.filter)
    return {
      action: 'permanently delete every matching contact and everything personal about them',
      filter: args.filter,
      contacts: matching,
      deleted_by_this_call: Math.min(matching, BULK_DELETE_MAX),
      keeps: ['consent records and events, anonymized'],
    }
  },
  async run(ctx, args) {
    return deleteMatching(db(ctx), ctx.services.contacts, ctx.tenant, args.filter)
  },
})

export const requestContactOptin = defineTool({
  name: 'request_contact_optin',
  title: 'Send a contact the double opt-in request',
  description:
    'The contact asked to receive messages: send them the double opt-in confirmation (chat: the approved opt-in confirmation template; e-mail: the confirmation link). The opt-in becomes pending; only the contact’s own confirmation makes it confirmed. Refused for a contact who opted out (409 contact_opted_out) or is confirmed already.',
  scope: 'contacts:write',
  rest: 'POST /app/contacts/{id}/optin-request',
  output: out.request_contact_optin,
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
  output: out.record_contact_opt_out,
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

export const audienceTools = [
  findContact,
  countContacts,
  exportContactsCsv,
  getTagTool,
  renameTagTool,
  deleteTagTool,
  tagContacts,
  untagContacts,
  deleteContacts,
  requestContactOptin,
  recordContactOptOut,
]
