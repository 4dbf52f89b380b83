import type { Static } from 'typebox'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Db } from '../../platform/db/client.ts'
import { type CheckedTemplate, checkTemplate, LIMITS, providerName, templateVariables } from './templates.check.ts'
import { providerNameTaken } from './templates.repository.ts'
import type { CheckBody, CheckResponse } from './templates.schemas.ts'

/**
 * The deterministic check of a template as typed (the web app's editor, the check_template tool): its issues, its
 * provider name, its variables and the limits. Changes nothing.
 */
export async function checkDraft(
  db: Db,
  tenant: TenantContext,
  body: Static<typeof CheckBody>,
): Promise<Static<typeof CheckResponse>> {
  const channel = body.channel ?? 'chat'
  const draft: CheckedTemplate = {
    name: body.name,
    content: body.content,
    channel: channel as CheckedTemplate['channel'],
    subject: body.subject ?? null,
    purpose: (body.purpose ?? 'marketing') as CheckedTemplate['purpose'],
    language: body.language || tenant.account.language,
    buttons: (body.buttons ?? []).map((b) => ({
      type: b.type as CheckedTemplate['buttons'][number]['type'],
      text: b.text,
      url: b.url ?? null,
    })),
    headerMedia: body.header_media ?? null,
  }
  const name = providerName(draft.name)
  const taken =
    channel === 'chat' &&
    name !== '' &&
    (await providerNameTaken(db, tenant.accountId, {
      // no template has the nil id: a new draft clashes with every other one
      id: body.id ?? '00000000-0000-0000-0000-000000000000',
      providerName: name,
      language: draft.language,
    }))
  return {
    issues: checkTemplate(draft, { providerNameTaken: taken }),
    provider_name: name,
    variables: templateVariables(draft),
    limits: { chat_body: LIMITS.chatBody, content: LIMITS.content, subject: LIMITS.subject },
  }
}
