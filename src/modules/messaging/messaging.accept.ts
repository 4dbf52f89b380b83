import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { isUuidKey } from '../../platform/db/per-tick.ts'
import { AppError, notFound } from '../../platform/http/errors.ts'
import { groupCommit } from '../../platform/jobs/group-commit.ts'
import { enqueueSql, notifyJobsSql } from '../../platform/jobs/jobs.ts'
import type { FieldDefinition } from '../contacts/index.ts'
import {
  customFieldTexts,
  extractVariables,
  invalidVariablesMessage,
  mayUseCustomFields,
  renderTemplate,
  type TemplateView,
  templateTexts,
  templateView,
  unfilledVariables,
  validateVariableValues,
  valueLanguage,
} from '../templates/index.ts'
import { type SendsTenant, TEMPLATE_SEND_QUEUE, type TemplateSendsDeps } from './messaging.ports.ts'
import { monthIn } from './messaging.quota.ts'
import * as repo from './messaging.repository.ts'
import { contactValues, recipientRefusal, sendView, templateRefusal, UUID } from './messaging.rules.ts'

const unprocessable = (code: string, message: string, details?: Record<string, unknown>) =>
  new AppError(422, code, message, { details })
const conflict = (code: string, message: string) => new AppError(409, code, message)

/** Accepting a template send (POST /messages): every check at once, then the send record and its job committed. */
export function sendAcceptance(deps: TemplateSendsDeps) {
  const { db, clock } = deps

  // the accepted sends of requests that arrive together: one transaction, one commit (see commitSends)
  const commit = groupCommit((rows: repo.NewTemplateSendRow[]) => commitSends(db, clock, rows))

  /** The contact's custom field values as text, when the template uses a custom field. */
  function customFieldsOf(view: TemplateView, contact: repo.CheckedContact, definitions: readonly FieldDefinition[]) {
    const texts = templateTexts(view)
    if (!extractVariables(texts).some((v) => definitions.some((d) => d.key === v))) return {}
    return customFieldTexts(definitions, contact.fields, valueLanguage(contact.language, view.language))
  }

  /** 422 invalid_variables naming every variable, from the caller's values and then from the contact's data. */
  function checkVariables(
    view: TemplateView,
    contact: repo.CheckedContact,
    supplied: Record<string, string>,
    definitions: readonly FieldDefinition[],
  ) {
    const texts = templateTexts(view)
    const keys = definitions.map((d) => d.key)
    const rendered = renderTemplate({
      texts,
      language: view.language,
      contact: { ...contactValues(contact), customFields: customFieldsOf(view, contact, definitions) },
      values: supplied,
      customFields: keys,
    })
    if (!rendered.ok) {
      const names = unfilledVariables(rendered)
      throw unprocessable(
        'invalid_variables',
        `Invalid variables: ${names.join(', ')} would stay unfilled (the contact has no value for it); nothing is sent`,
        { variables: names.map((name) => ({ name, problem: 'no_value' })) },
      )
    }
  }

  return {
    /**
     * POST /messages with a template: every check at once, then the send record (queued) and its job in one
     * transaction. What the checks read is one statement for the requests of a turn (repo.sendChecks). Order: the
     * contact (404), the template (404, 422 template_not_chat, template_not_sendable, template_not_approved), the
     * caller's variables (422 invalid_variables), sending paused (403 subscription_locked), the monthly quota (403
     * limit_reached; checked, not reserved), the chat number (409 chat_not_connected), the recipient (409
     * contact_no_phone, contact_opted_out, contact_not_optin), and last the contact's own values for contact
     * variables (422 invalid_variables when one would stay empty).
     */
    async queue(
      tenant: SendsTenant,
      input: { contact_id: string; template: { id: string; variables?: Record<string, string> } },
    ) {
      if (!isUuidKey(input.contact_id)) throw notFound('contact')
      const found = await repo.sendChecks(db, {
        accountId: tenant.accountId,
        contactId: input.contact_id,
        templateId: isUuidKey(input.template.id) ? input.template.id : null,
        month: monthIn(clock.now(), tenant.account.timezone),
      })
      const contact = found.contact
      if (!contact) throw notFound('contact')
      if (!found.template) throw notFound('template')
      // the account's field keys belong to the view when the template may use one (as GET /templates shows it)
      const mayUseFields = mayUseCustomFields(templateTexts(found.template))
      const view = templateView(found.template, mayUseFields ? found.definitions.map((d) => d.key) : [])
      const refusal = templateRefusal(view)
      if (refusal) throw unprocessable(refusal.code, refusal.message)
      const supplied = input.template.variables ?? {}
      // the definitions matter when the template may use one, or the caller passed values (a custom field's name
      // among them is refused as coming from the contact)
      const definitions = mayUseFields || Object.keys(supplied).length > 0 ? found.definitions : []
      const invalid = validateVariableValues(
        templateTexts(view),
        supplied,
        definitions.map((d) => d.key),
      )
      if (invalid.length > 0) {
        throw unprocessable('invalid_variables', invalidVariablesMessage(invalid), {
          variables: invalid.map((i) => ({ name: i.variable, problem: i.problem })),
        })
      }
      if (tenant.account.sendingPaused) {
        throw new AppError(403, 'subscription_locked', 'Sending is paused for this account')
      }
      if (!found.unitLeft) {
        throw new AppError(403, 'limit_reached', 'The monthly message quota is used up', { key: 'message_quota' })
      }
      if (!found.chatConnected) throw conflict('chat_not_connected', 'No chat number is connected')
      const recipient = recipientRefusal(contact)
      if (recipient) throw conflict(recipient.code, recipient.message)
      checkVariables(view, contact, supplied, definitions)
      const now = clock.now()
      const id = randomUUID()
      const committed = await commit({
        accountId: tenant.accountId,
        id,
        contactId: contact.id,
        templateId: view.id,
        variables: supplied,
        status: 'queued',
        createdAt: now,
        updatedAt: now,
      })
      // answered 202 only once this send's record and job are committed
      if (!committed.ok) throw committed.error
      return { send_id: id, status: 'queued' as const }
    },

    async get(tenant: Pick<SendsTenant, 'accountId'>, id: string) {
      if (!UUID.test(id)) throw notFound('send')
      const row = await repo.findSend(db, tenant.accountId, id)
      if (!row) throw notFound('send')
      return sendView(row)
    },
  }
}

/**
 * Writes accepted sends, each with its job, in one statement (group commit: the requests that arrived while the
 * previous group was committing; one statement is one transaction, and the jobs' NOTIFY goes out at its commit).
 * When it fails, each send is tried again in a statement of its own, so one send's failure never fails the others;
 * the answer per send says whether it is committed.
 */
async function commitSends(db: Db, clock: Clock, rows: repo.NewTemplateSendRow[]) {
  const write = async (list: repo.NewTemplateSendRow[]) => {
    const jobs = enqueueSql(
      clock.now(),
      list.map((row) => ({ accountId: row.accountId, queue: TEMPLATE_SEND_QUEUE, payload: { send_id: row.id } })),
    )
    await db.execute(sql`
      WITH sends AS (${repo.insertQueuedSendsSql(list)}), added AS (${jobs.insert})
      SELECT ${notifyJobsSql('added')} AS notified`)
  }
  try {
    await write(rows)
    return rows.map(() => ({ ok: true as const }))
  } catch (error) {
    if (rows.length === 1) return [{ ok: false as const, error }]
    return Promise.all(
      rows.map((row) =>
        write([row]).then(
          () => ({ ok: true as const }),
          (e: unknown) => ({ ok: false as const, error: e }),
        ),
      ),
    )
  }
}
