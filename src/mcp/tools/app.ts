import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Type } from 'typebox'
import { CheckBody as AutomationCheckBody } from '../../modules/automations/automations.app.ts'
import { ImportError, importContacts } from '../../modules/contacts/contacts.import.ts'
import { findContact } from '../../modules/contacts/contacts.repository.ts'
import { consentHistory } from '../../modules/contacts/contacts.service.ts'
import { NewStepBody } from '../../modules/followups/followups.schemas.ts'
import { checkStep, LIMITS as FOLLOWUP_LIMITS } from '../../modules/followups/followups.service.ts'
import { AskBody } from '../../modules/knowledge/knowledge.app.ts'
import { passagesOf } from '../../modules/knowledge/knowledge.repository.ts'
import { checkDraft, CheckBody as TemplateCheckBody } from '../../modules/templates/templates.app.ts'
import { checkTemplate } from '../../modules/templates/templates.check.ts'
import { AppError, notFound } from '../../platform/http/errors.ts'
import { out } from '../outputs.ts'
import { defineTool, restRule, type ToolContext } from '../tool.ts'
import { ContactId, paging, Uuid } from './common.ts'

/**
 * The web app's own functions under /app that are account actions (the contact page's consent history, the contact
 * import, the template and follow-up checks, adding a follow-up step, a document's passages), through the same
 * module functions the /app routes call and with the same scopes.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const db = (ctx: ToolContext) => ctx.platform.database.orm

export const getContactConsentHistory = defineTool({
  name: 'get_contact_consent_history',
  title: 'Consent history of a contact',
  description:
    'Every change of a contact’s chat and e-mail opt-in, oldest first: from and to state, the source (api, import, double_opt_in, inbound_message, ...), the address it was about and the evidence (keyword, confirmation link, request). The audit trail for questions about consent.',
  scope: 'contacts:read',
  rest: 'GET /app/contacts/{id}/consent-history',
  output: out.get_contact_consent_history,
  kind: 'read',
  input: Type.Object({ contact_id: ContactId }),
  async run(ctx, args) {
    const { accountId } = ctx.tenant
    if (!UUID.test(args.contact_id) || !(await findContact(db(ctx), accountId, args.contact_id))) {
      throw notFound('contact')
    }
    const records = await consentHistory(db(ctx), accountId, args.contact_id)
    return {
      history: records.map((r) => ({
        channel: r.channel,
        from: r.fromState,
        to: r.toState,
        source: r.source,
        address: r.address,
        evidence: r.evidence,
        recorded_at: r.recordedAt.toISOString(),
      })),
    }
  },
})

/** The largest CSV text a tool call takes (the web app uploads files up to 200 MB; an assistant pastes text). */
export const IMPORT_TOOL_MAX_CHARS = 1_000_000

export const importContactsCsv = defineTool({
  name: 'import_contacts_csv',
  title: 'Import contacts from CSV text',
  description:
    'Import contacts from CSV text with a header line (columns name, email, phone, tags; tags separated by ; or |). Known e-mail addresses and phone numbers are updated, new ones created; opt-ins are never raised (nobody is subscribed). Answers the report: rows, created, updated, unchanged, rejected lines with the reason. At most 1,000,000 characters; larger files go through the web app.',
  scope: 'contacts:write',
  rest: 'POST /app/contacts/import (CSV as text)',
  output: out.import_contacts_csv,
  kind: 'write',
  idempotent: true,
  input: Type.Object({
    csv: Type.String({
      minLength: 1,
      maxLength: IMPORT_TOOL_MAX_CHARS,
      description: 'the CSV file’s text, header line first',
    }),
  }),
  async run(ctx, args) {
    const dir = await mkdtemp(path.join(tmpdir(), 'herold-import-'))
    try {
      const file = path.join(dir, 'contacts.csv')
      await writeFile(file, args.csv, 'utf8')
      const report = await importContacts(db(ctx), ctx.platform.clock, { accountId: ctx.tenant.accountId, file })
      return { ok: true, report }
    } catch (error) {
      if (error instanceof ImportError) {
        throw new AppError(400, 'bad_request', error.message, { key: 'csv_invalid' })
      }
      throw error
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  },
})

export const checkTemplateTool = defineTool({
  name: 'check_template',
  title: 'Check a template draft',
  description:
    'The deterministic check of a template as written, without saving it: every rule it breaks (name, language, content length, variables and their placement, buttons, header image, a provider name another chat template of the account already has), its provider name and variables. An empty issues list means it can be submitted.',
  scope: 'templates:read',
  rest: 'POST /app/templates/check',
  output: out.check_template,
  kind: 'read',
  input: Type.Object({
    template_id: Type.Optional(Uuid('the template being changed (its own name is no clash)')),
    name: Type.String({ maxLength: 1000 }),
    content: Type.String({ maxLength: 40000 }),
    channel: Type.Optional(Type.Union([Type.Literal('chat'), Type.Literal('email')])),
    subject: Type.Optional(Type.Union([Type.String({ maxLength: 1000 }), Type.Null()])),
    purpose: Type.Optional(
      Type.Union([Type.Literal('marketing'), Type.Literal('utility'), Type.Literal('optin_confirm')]),
    ),
    language: Type.Optional(Type.String({ maxLength: 20, description: 'default the account language' })),
    buttons: Type.Optional(
      Type.Array(
        Type.Object(
          {
            type: Type.Union([Type.Literal('QUICK_REPLY'), Type.Literal('URL')]),
            text: Type.String({ maxLength: 200 }),
            url: Type.Optional(Type.Union([Type.String({ maxLength: 4000 }), Type.Null()])),
          },
          { additionalProperties: false },
        ),
        { maxItems: 20 },
      ),
    ),
  }),
  async run(ctx, args) {
    const { template_id, ...draft } = args
    const body = restRule(TemplateCheckBody, { ...draft, ...(template_id ? { id: template_id } : {}) }, 'body')
    return await checkDraft(db(ctx), ctx.tenant, body)
  },
})

export const checkFollowupStepText = defineTool({
  name: 'check_followup_step_text',
  title: 'Check a follow-up step’s text',
  description:
    'The issues the template check finds in a follow-up step’s text as a chat marketing template (the check creating a sequence or changing a step runs); an empty list means it can go out. Changes nothing.',
  scope: 'followups:write',
  rest: 'POST /app/followups/check',
  output: out.check_followup_step_text,
  kind: 'read',
  input: Type.Object({ text: Type.String({ maxLength: 20000 }) }),
  async run(ctx, args) {
    const issues = checkTemplate({
      name: 'followup step',
      content: args.text,
      channel: 'chat',
      subject: null,
      purpose: 'marketing',
      language: ctx.tenant.account.language,
      buttons: [],
      headerMedia: null,
    })
    return { issues }
  },
})

export const addFollowupStep = defineTool({
  name: 'add_followup_step',
  title: 'Add a follow-up step',
  description:
    'Add a step at the end of a follow-up sequence (at most 20): its text becomes a WhatsApp template that is submitted for approval (a text the check refuses is 400 followup_template_invalid). Active enrollments get it when they reach it; contacts that completed the sequence do not.',
  scope: 'followups:write',
  rest: 'POST /app/followups/{id}/steps',
  output: out.add_followup_step,
  kind: 'write',
  openWorld: true,
  input: Type.Object({
    followup_id: Uuid('the follow-up sequence id, from list_followups'),
    text: Type.String({ minLength: 1, maxLength: 1024, description: 'the message text; {{name}} fills the name' }),
    delay: NewStepBody.properties.delay,
    send_time: Type.Optional(NewStepBody.properties.send_time),
  }),
  async preview(ctx, args) {
    const { followup_id, ...step } = args
    restRule(NewStepBody, step, 'body')
    // the service's own rules, checked before a token is issued
    checkStep(step, 'step')
    const followup = await ctx.services.followups.get(ctx.tenant, followup_id)
    if (followup.steps.length >= FOLLOWUP_LIMITS.steps) {
      throw new AppError(400, 'bad_request', `A sequence has at most ${FOLLOWUP_LIMITS.steps} steps`)
    }
    return {
      action: 'add a step to a follow-up sequence; its text is submitted to WhatsApp for approval',
      followup: { id: followup.id, name: followup.name, status: followup.status, steps: followup.steps.length },
      step,
      templates_submitted: 1,
      issues: checkTemplate({
        name: 'followup step',
        content: args.text,
        channel: 'chat',
        subject: null,
        purpose: 'marketing',
        language: ctx.tenant.account.language,
        buttons: [],
        headerMedia: null,
      }),
    }
  },
  async run(ctx, args) {
    const { followup_id, ...step } = args
    const body = restRule(NewStepBody, step, 'body')
    return { ok: true, followup: await ctx.services.followups.addStep(ctx.tenant, followup_id, body) }
  },
})

export const getKnowledgeDocumentPassages = defineTool({
  name: 'get_knowledge_document_passages',
  title: 'Passages of a knowledge document',
  description:
    'A knowledge document’s passages in order, as the search indexes them and the built-in AI quotes them: position, PDF page, heading and text. Paged (limit 1-200, default 50).',
  scope: 'knowledge:write',
  rest: 'GET /app/knowledge/documents/{id}/passages',
  output: out.get_knowledge_document_passages,
  kind: 'read',
  input: Type.Object({ document_id: Uuid('the document id, from list_knowledge_documents'), ...paging(200, 50) }),
  async run(ctx, args) {
    const limit = args.limit ?? 50
    const offset = args.offset ?? 0
    const found = UUID.test(args.document_id)
      ? await passagesOf(db(ctx), ctx.tenant.accountId, args.document_id, { limit, offset })
      : undefined
    if (!found) throw notFound('document')
    return { passages: found.slice(0, limit), has_more: found.length > limit, limit, offset }
  },
})

export const askKnowledgeTestQuestion = defineTool({
  name: 'ask_knowledge_test_question',
  title: 'Ask the AI a test question',
  description:
    'How the built-in AI would answer a customer’s chat question from the knowledge documents, without sending or storing anything: the same five best passages, the same prompt to the configured model, the same strict reading of its answer. Answers outcome (answer or declined), the answer, the reason for a decline (no_passages: no model asked) and the passages with the cited ones marked. Works while AI replies are switched off; 409 ai_unavailable without an AI endpoint, 502 ai_call_failed when the model fails.',
  scope: 'knowledge:write',
  rest: 'POST /app/knowledge/ask',
  output: out.ask_knowledge_test_question,
  kind: 'read',
  openWorld: true,
  input: AskBody,
  async run(ctx, args) {
    const { question } = restRule(AskBody, args, 'body')
    return await ctx.services.ai.ask(ctx.tenant.accountId, question)
  },
})

export const checkAutomation = defineTool({
  name: 'check_automation',
  title: 'Check an automation before saving',
  description:
    'A dry run of create_automation and update_automation on an unsaved definition (intent, trigger, steps): `problems` lists every reason saving would be refused, `changes` and `notice` what the safety rules would change (a double opt-in step prepended for a mailing_list or newsletter intent; messages 24 hours or more apart cut after the first such message), `steps` the steps as they would be stored. Saves nothing.',
  scope: 'automations:write',
  rest: 'POST /app/automations/check',
  output: out.check_automation,
  kind: 'read',
  input: AutomationCheckBody,
  async run(ctx, args) {
    return await ctx.services.automations.check(ctx.tenant, restRule(AutomationCheckBody, args, 'body'))
  },
})

export const appTools = [
  getContactConsentHistory,
  importContactsCsv,
  checkTemplateTool,
  checkFollowupStepText,
  addFollowupStep,
  getKnowledgeDocumentPassages,
  askKnowledgeTestQuestion,
  checkAutomation,
]
