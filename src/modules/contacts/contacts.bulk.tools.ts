import { Type } from 'typebox'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import { badRequest, notFound } from '../../platform/http/errors.ts'
import { ContactId } from '../../platform/tools/common.ts'
import { obj, ok } from '../../platform/tools/outputs.ts'
import { ImportReportSchema } from './contacts.app.schemas.ts'
import * as bulk from './contacts.bulk.app.ts'
import { BULK_DELETE_MAX, hasCriterion } from './contacts.bulk.ts'
import type { ContactsServices } from './contacts.routes.ts'
import { defineTool, Filter, NewTag, refuseSystemTag, TagName, tool } from './contacts.tools.shared.ts'

// The account-wide tools: export, tags by name, bulk changes by filter, the consent history, the CSV import.

/** The largest CSV text a tool call takes (the web app uploads files up to 200 MB; an assistant pastes text). */
export const IMPORT_TOOL_MAX_CHARS = 1_000_000

const exportContactsCsv = defineTool({
  name: 'export_contacts_csv',
  title: 'Export contacts as CSV',
  description:
    'The matching contacts as CSV text (header id, name, email, phone, optin_chat, optin_email, tags separated by ;, language, source, created_at, then one column per custom field named by its key), oldest first, at most 2000 rows per call: page with offset while has_more. import_contacts_csv reads the same columns.',
  scope: 'contacts:read',
  rest: 'GET /app/contacts/export',
  output: obj({
    csv: Type.String({ description: 'the CSV text, header line first' }),
    rows: Type.Integer({ description: 'contacts in this page' }),
    has_more: Type.Boolean(),
    next_offset: Type.Union([Type.Integer(), Type.Null()]),
  }),
  kind: 'read',
  input: Type.Object({
    filter: Type.Optional(Filter),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 2000, default: 500 })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000_000, default: 0 })),
  }),
  async run(ctx, args) {
    const page = { limit: args.limit ?? 500, offset: args.offset ?? 0 }
    return ctx.services.contacts.bulk.exportCsv(ctx.tenant, args.filter ?? {}, page)
  },
})

const tagArgument = { schemas: { tag: TagName } }

const bulkOperationTools = [
  tool(bulk.getTag, {
    name: 'get_tag',
    title: 'One tag with its contact count',
    description:
      'How many contacts carry a tag (every contact counted, unlike the sample of list_tags), under which origins (system, ki, manuell), and whether it is a system tag that cannot be changed. 404 when no contact has it.',
    ...tagArgument,
  }),
  tool(bulk.renameTag, {
    name: 'rename_tag',
    description:
      'Rename a tag on every contact that carries it, keeping each one’s origin; a contact with both names keeps one. System tags cannot be renamed or made (400 system_tag); the new name is at most 40 characters.',
    schemas: { tag: TagName, new_name: NewTag },
    async preview(ctx, { params: { tag }, body: { new_name } }) {
      refuseSystemTag(tag)
      refuseSystemTag(new_name)
      const contacts = await contactsWithTag(ctx.services, ctx.tenant, tag)
      return { action: `rename the tag ${tag} to ${new_name} on every contact`, contacts }
    },
  }),
  tool(bulk.deleteTag, {
    name: 'delete_tag',
    title: 'Delete a tag from every contact',
    description:
      'Remove a tag from every contact that carries it (the contacts stay). Automations and newsletter segments that use the tag no longer match anyone. System tags cannot be deleted (400 system_tag).',
    ...tagArgument,
    async preview(ctx, { params: { tag } }) {
      refuseSystemTag(tag)
      const contacts = await contactsWithTag(ctx.services, ctx.tenant, tag)
      return { action: `remove the tag ${tag} from every contact`, contacts }
    },
  }),
  tool(bulk.bulkTagContacts, {
    name: 'tag_contacts',
    description:
      'Add a tag (origin manuell, at most 40 characters, never a system tag) to every contact matching the filter, at most 10,000 per call (has_more: call again); contacts with 30 tags are skipped. Automations waiting for the tag start for each newly tagged contact.',
    schemas: { filter: Filter, tag: NewTag },
    idempotent: true,
    async preview(ctx, { body: { filter, tag } }) {
      refuseSystemTag(tag)
      const matching = await ctx.services.contacts.bulk.count(ctx.tenant, filter)
      return { action: `add the tag ${tag} to every matching contact`, filter, contacts: matching }
    },
  }),
  tool(bulk.bulkUntagContacts, {
    name: 'untag_contacts',
    description:
      'Remove a tag from every contact matching the filter that carries it (never a system tag). To remove a tag from all contacts, delete_tag does the same with the tag alone.',
    schemas: { filter: Filter, tag: NewTag },
    kind: 'destructive',
    idempotent: true,
    async preview(ctx, { body: { filter, tag } }) {
      refuseSystemTag(tag)
      const matching = await ctx.services.contacts.bulk.count(ctx.tenant, { ...filter, tag })
      return { action: `remove the tag ${tag} from the matching contacts`, filter, contacts: matching }
    },
  }),
  tool(bulk.bulkDeleteContacts, {
    name: 'delete_contacts',
    description: `Permanently delete the contacts matching the filter (at least one criterion), each as delete_contact deletes one: conversations, messages, pending sends and automation runs removed, consent records anonymized. At most ${BULK_DELETE_MAX} per call (has_more: call again).`,
    schemas: { filter: Filter },
    kind: 'destructive',
    async preview(ctx, { body: { filter } }) {
      if (!hasCriterion(filter)) throw badRequest('Give at least one filter criterion', 'filter_required')
      const matching = await ctx.services.contacts.bulk.count(ctx.tenant, filter)
      return {
        action: 'permanently delete every matching contact and everything personal about them',
        filter,
        contacts: matching,
        deleted_by_this_call: Math.min(matching, BULK_DELETE_MAX),
        keeps: ['consent records and events, anonymized'],
      }
    },
  }),
]

/** How many contacts carry a tag; 404 when none does (what a two-step tag tool shows). */
async function contactsWithTag(services: ContactsServices, tenant: TenantContext, tag: string) {
  const contacts = await services.contacts.bulk.contactsWithTag(tenant, tag)
  if (contacts === 0) throw notFound('tag')
  return contacts
}

export const bulkTools = [exportContactsCsv, ...bulkOperationTools]

export const getContactConsentHistory = tool(bulk.listContactConsentHistory, {
  name: 'get_contact_consent_history',
  title: 'Consent history of a contact',
  description:
    'Every change of a contact’s chat and e-mail opt-in, oldest first: from and to state, the source (api, import, double_opt_in, inbound_message, ...), the address it was about and the evidence (keyword, confirmation link, request). The audit trail for questions about consent.',
  id: { name: 'contact_id', schema: ContactId },
})

export const importContactsCsv = defineTool({
  name: 'import_contacts_csv',
  title: 'Import contacts from CSV text',
  description:
    'Import contacts from CSV text with a header line. Columns are recognised by their names in German and English and in the exports of Mailchimp, Brevo, HubSpot, Shopify and Excel (e-mail, phone, the name or first and last name, tags separated by ; or |); the delimiter (, ; tab |) is detected; a column named as a custom field (its key or label) fills it, a value that does not fit rejects its line; other columns are listed in ignored_columns (create_fields makes them text fields). Known e-mail addresses and phone numbers are updated, new ones created; opt-ins are never raised (nobody is subscribed). Answers the report: rows, created, updated, unchanged, rejected lines with the reason, ignored columns. At most 1,000,000 characters; larger files go through the web app.',
  scope: 'contacts:write',
  rest: 'POST /app/contacts/import (CSV as text)',
  output: obj({ ...ok, report: ImportReportSchema }),
  kind: 'write',
  idempotent: true,
  input: Type.Object({
    csv: Type.String({
      minLength: 1,
      maxLength: IMPORT_TOOL_MAX_CHARS,
      description: 'the CSV file’s text, header line first',
    }),
    map: Type.Optional(
      Type.String({
        maxLength: 4000,
        description:
          'header names to fields or custom field keys when the names are not recognised: "Mobil=phone,Kundennummer=customer_no"',
      }),
    ),
    create_fields: Type.Optional(
      Type.Boolean({
        description:
          'make every column that fills nothing else a new text field (key from the header) before importing',
      }),
    ),
  }),
  async run(ctx, args) {
    const format = { map: args.map, createFields: args.create_fields }
    return { ok: true, report: await ctx.services.contacts.bulk.importCsvText(ctx.tenant, args.csv, format) }
  },
})
