import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { getAccount } from '../../platform/auth/accounts.service.ts'
import { accountCountry } from '../../platform/auth/countries.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError, notFound } from '../../platform/http/errors.ts'
import {
  type ContactFilter,
  contactsWithTag,
  countMatching,
  deleteMatching,
  deleteTag,
  exportCsv,
  getTag,
  lookupContact,
  renameTag,
  tagMatching,
  untagMatching,
} from './contacts.bulk.ts'
import { consentHistory } from './contacts.consent.ts'
import { fieldDefinitionsOf } from './contacts.fields-read.ts'
import { ImportError, importContacts } from './contacts.import.ts'
import type { ContactsTenant } from './contacts.ports.ts'
import { contactLabels, findContact } from './contacts.repository.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** How the bulk delete removes one contact: as DELETE /contacts/{id} does. */
type DeleteOne = (tenant: ContactsTenant, id: string, options: { requestedByContact: boolean }) => Promise<unknown>

/**
 * The account-wide contact work of the web app and the tools (contacts.bulk.ts): lookups, counts, tags by name, bulk
 * changes by filter, the CSV export, a contact's consent history and the import of CSV text. `importBatch`: the
 * import's batch size on this kind of database.
 */
export function contactsBulkService(
  { db, clock, importBatch }: { db: Db; clock: Clock; importBatch: number },
  deleteOne: DeleteOne,
) {
  /** Imports a CSV file as the web app's upload and `herold import contacts` do (contacts.import.ts). */
  const importFile = (
    tenant: ContactsTenant,
    file: Omit<Parameters<typeof importContacts>[2], 'accountId' | 'batchSize'>,
  ) => importContacts(db, clock, { ...file, accountId: tenant.accountId, batchSize: importBatch })

  return {
    importFile,
    /** the account's country, for phone numbers in national format (null: international only) */
    accountCountry: async (tenant: ContactsTenant) => accountCountry(await getAccount(db, tenant.accountId)),
    /** the contact holding exactly this e-mail address or phone number; 404 when none */
    lookup: (tenant: ContactsTenant, address: { email?: string; phone?: string }) =>
      lookupContact(db, tenant.accountId, address),
    /** name, phone and e-mail of the contacts of these ids (others left out) */
    labels: (tenant: ContactsTenant, ids: string[]) => contactLabels(db, tenant.accountId, ids),
    /** the account's custom field definitions, as filters name them */
    fieldDefinitions: (tenant: ContactsTenant) => fieldDefinitionsOf(db, tenant.accountId),
    count: (tenant: ContactsTenant, filter: ContactFilter) => countMatching(db, tenant.accountId, filter, clock.now()),
    exportCsv: (tenant: ContactsTenant, filter: ContactFilter, page: { limit: number; offset: number }) =>
      exportCsv(db, tenant.accountId, filter, page, clock.now()),
    getTag: (tenant: ContactsTenant, tag: string) => getTag(db, tenant.accountId, tag),
    /** how many contacts carry the tag (its name trimmed) */
    contactsWithTag: (tenant: ContactsTenant, tag: string) => contactsWithTag(db, tenant.accountId, tag.trim()),
    renameTag: (tenant: ContactsTenant, tag: string, newName: string) => renameTag(db, tenant.accountId, tag, newName),
    deleteTag: (tenant: ContactsTenant, tag: string) => deleteTag(db, tenant.accountId, tag),
    tagMatching: (tenant: ContactsTenant, filter: ContactFilter, tag: string) =>
      tagMatching(db, clock, tenant.accountId, filter, tag),
    untagMatching: (tenant: ContactsTenant, filter: ContactFilter, tag: string) =>
      untagMatching(db, tenant.accountId, filter, tag, clock.now()),
    deleteMatching: (tenant: ContactsTenant, filter: ContactFilter) =>
      deleteMatching(db, { delete: deleteOne }, tenant, filter, clock.now()),

    /** Every change of the contact's opt-ins, oldest first; another account's contact, or none, is a 404. */
    async consentHistory(tenant: ContactsTenant, contactId: string) {
      const { accountId } = tenant
      if (!UUID.test(contactId) || !(await findContact(db, accountId, contactId))) throw notFound('contact')
      const records = await consentHistory(db, accountId, contactId)
      return records.map((r) => ({
        channel: r.channel,
        from: r.fromState,
        to: r.toState,
        source: r.source,
        address: r.address,
        evidence: r.evidence,
        recorded_at: r.recordedAt.toISOString(),
      }))
    },

    /** Imports CSV text (an assistant's paste) as the web app's import does a file; a bad file is 400 csv_invalid. */
    async importCsvText(tenant: ContactsTenant, csv: string, format: { map?: string; createFields?: boolean }) {
      const dir = await mkdtemp(path.join(tmpdir(), 'herold-import-'))
      try {
        const file = path.join(dir, 'contacts.csv')
        await writeFile(file, csv, 'utf8')
        return await importFile(tenant, { file, format })
      } catch (error) {
        if (error instanceof ImportError) {
          throw new AppError(400, 'bad_request', error.message, { key: 'csv_invalid' })
        }
        throw error
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    },
  }
}

export type ContactsBulkService = ReturnType<typeof contactsBulkService>
