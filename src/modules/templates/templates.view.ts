import type { Db } from '../../platform/db/client.ts'
import {
  isSendable,
  optinConfirmButton,
  providerCategory,
  rejectionReasonText,
  submissionReadiness,
  templateTexts,
  templateVariables,
} from './templates.check.ts'
import * as repo from './templates.repository.ts'
import { settableVariables } from './templates.variables.ts'

/** Contacts have no custom fields yet; once they do, their names come from the contact and stop being settable. */
const CUSTOM_FIELDS: readonly string[] = []

/** A template as GET /templates lists it. */
export function templateView(row: repo.TemplateRow) {
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
    settable_variables: settableVariables(templateTexts(row), CUSTOM_FIELDS),
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
    ...templateView(row),
    ...submissionReadiness(row, { providerNameTaken: taken }),
    rejection_reason_text: row.providerStatus === 'rejected' ? rejectionReasonText(row.rejectionReason) : null,
  }
}
