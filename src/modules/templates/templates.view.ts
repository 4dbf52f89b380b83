import type { Db } from '../../platform/db/client.ts'
import { perTick } from '../../platform/db/per-tick.ts'
import { fieldDefinitionsOf } from '../contacts/index.ts'
import {
  isSendable,
  optinConfirmButton,
  providerCategory,
  rejectionReasonText,
  submissionReadiness,
  templateTexts,
  templateVariables,
} from './templates.check.ts'
import { mayUseCustomFields } from './templates.fields.ts'
import * as repo from './templates.repository.ts'
import { settableVariables } from './templates.variables.ts'

/**
 * The account's custom field keys when one of the templates may use one (a named variable beyond the built-in contact
 * variables), else none without a read: their names come from the contact and are not settable.
 */
export async function customFieldKeys(
  dbOrTx: Db,
  accountId: string,
  rows: ReadonlyArray<Pick<repo.TemplateRow, 'content' | 'buttons'>>,
): Promise<string[]> {
  if (!rows.some((row) => mayUseCustomFields(templateTexts(row)))) return []
  return (await fieldDefinitionsOf(dbOrTx, accountId)).map((d) => d.key)
}

/**
 * fieldDefinitionsOf for the lookups of one turn of the event loop: each account read once, however many requests of
 * it arrived together (POST /messages reads them for its template's view and for its own checks). Never in a
 * transaction.
 */
export const fieldDefinitionsBatched = perTick(async (db, accountIds: readonly string[]) => {
  const unique = [...new Set(accountIds)]
  const read = new Map(await Promise.all(unique.map(async (id) => [id, await fieldDefinitionsOf(db, id)] as const)))
  return accountIds.map((id) => read.get(id) ?? [])
})

/** customFieldKeys for one template outside a transaction, read with the other lookups of the turn. */
export async function customFieldKeysBatched(db: Db, accountId: string, row: repo.TemplateRow): Promise<string[]> {
  if (!mayUseCustomFields(templateTexts(row))) return []
  return (await fieldDefinitionsBatched(db, accountId)).map((d) => d.key)
}

/** A template as GET /templates lists it; `customFields`: the account's field keys (customFieldKeys). */
export function templateView(row: repo.TemplateRow, customFields: readonly string[] = []) {
  return {
    id: row.id,
    name: row.name,
    provider_name: row.providerName,
    content: row.content,
    channel: row.channel,
    subject: row.subject,
    purpose: row.purpose,
    provider_category: row.channel === 'chat' ? providerCategory(row.purpose) : null,
    language: row.language,
    buttons: row.buttons,
    confirm_button: row.purpose === 'optin_confirm' && row.channel === 'chat' ? optinConfirmButton(row.language) : null,
    header_media: row.headerMedia,
    state: row.state,
    provider_status: row.providerStatus,
    provider_template_id: row.providerTemplateId,
    rejection_reason: row.rejectionReason,
    system: row.system,
    variables: templateVariables(row),
    settable_variables: settableVariables(templateTexts(row), customFields),
    sendable: isSendable(row),
    submitted_at: row.submittedAt,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  }
}
export type TemplateView = ReturnType<typeof templateView>

export type TemplateDetailView = TemplateView &
  ReturnType<typeof submissionReadiness> & {
    rejection_reason_text: string | null
  }

/** A template as GET /templates/{id} shows it: with what stands between it and a submission. */
export async function templateDetail(dbOrTx: Db, row: repo.TemplateRow): Promise<TemplateDetailView> {
  const taken =
    row.channel === 'chat' &&
    row.providerName !== '' &&
    (await repo.providerNameTaken(dbOrTx, row.accountId, {
      id: row.id,
      providerName: row.providerName,
      language: row.language,
    }))
  return {
    ...templateView(row, await customFieldKeys(dbOrTx, row.accountId, [row])),
    ...submissionReadiness(row, { providerNameTaken: taken }),
    rejection_reason_text: row.providerStatus === 'rejected' ? rejectionReasonText(row.rejectionReason) : null,
  }
}
