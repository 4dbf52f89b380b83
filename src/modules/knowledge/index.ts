import pino from 'pino'
import { getAccount } from '../../platform/auth/accounts.service.ts'
import type { Db } from '../../platform/db/client.ts'
import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import { createOutboundHttp } from '../../platform/outbound-http.ts'
import type { ChannelsService } from '../channels/index.ts'
import { isConsentKeyword } from '../consent/index.ts'
import { type ContactCleanup, type ContactsService, changeContactTag, consentSubject } from '../contacts/index.ts'
import { type InboundListener, markConversationForPerson } from '../inbox/index.ts'
import { monthIn, releaseMessageUnit, reserveMessageUnit } from '../messaging/index.ts'
import {
  AI_REPLY_QUEUE,
  AI_TAGS_QUEUE,
  type AiService,
  aiOnInbound,
  aiService,
  aiSettingsPreload,
} from './knowledge.ai.ts'
import { knowledgeAppRoutes } from './knowledge.app.ts'
import { deleteContactAiRecords } from './knowledge.repository.ts'
import { aiRoutes, knowledgeRoutes } from './knowledge.routes.ts'
import { type KnowledgeService, knowledgeService, MAX_DOCUMENT_BYTES } from './knowledge.service.ts'
import { knowledgeTools } from './knowledge.tools.ts'

/** Downloads of the url form: the SSRF guard, no redirects, 15 s, one byte past the limit to tell "too large". */
const DOWNLOAD_TIMEOUT_MS = 15_000

/** An inbound chat text queues the AI's reply and tag jobs in its own transaction (when the account switched it on). */
const aiInbound: InboundListener = {
  preload: aiSettingsPreload,
  run: (tx, clock, message, preloaded) => aiOnInbound(tx, clock, message, { isConsentKeyword }, preloaded),
}

const logger = pino({ name: 'herold.ai', level: process.env.HEROLD_LOG_LEVEL ?? 'info' }, pino.destination(2))

/** The knowledge service and its download client (the composition root closes it). */
export function createKnowledgeService({ config, database, clock }: PlatformDeps) {
  const http = createOutboundHttp({
    allowPrivateTargets: config.allowPrivateTargets,
    timeoutMs: DOWNLOAD_TIMEOUT_MS,
    maxResponseBytes: MAX_DOCUMENT_BYTES + 1,
  })
  return {
    service: knowledgeService({ db: database.orm, clock, http, allowPrivateTargets: config.allowPrivateTargets }),
    http,
  }
}

/** The built-in AI of a process: the operator's endpoint (HEROLD_AI_*), sends through the channels module. */
/** What the AI needs of other modules: the account's tag names, and the chat number to reply through. */
export interface AiNeeds {
  contacts: Pick<ContactsService, 'tagCounts'>
  channels: Pick<ChannelsService, 'sendText'>
}

/** The AI service and its endpoint client (the composition root closes it). */
export function createAiService(deps: PlatformDeps, { contacts, channels }: AiNeeds) {
  const { config, database, clock } = deps
  const db = database.orm
  // the endpoint is the operator's own choice (often a local model server), not a customer's: no SSRF guard
  const http = createOutboundHttp({
    allowPrivateTargets: true,
    // a model may think for a while (HEROLD_AI_TIMEOUT_MS, 60 s by default); the reply is a background job
    timeoutMs: config.aiTimeoutMs,
    maxResponseBytes: 1024 * 1024,
  })
  const service = aiService({
    db,
    clock,
    endpoint: { url: config.aiUrl, key: config.aiKey, model: config.aiModel },
    http,
    account: (accountId) => getAccount(db, accountId),
    contact: (tx: Db, accountId, contactId) => consentSubject(tx, accountId, contactId),
    async sendText(accountId, input, options) {
      const outcome = await channels.sendText(accountId, input, options)
      return outcome.ok
        ? { ok: true as const, messageId: outcome.messageId }
        : { ok: false as const, error: { kind: outcome.error.kind, message: outcome.error.message } }
    },
    quota: {
      async reserve(accountId, timezone) {
        const month = monthIn(clock.now(), timezone)
        return (await reserveMessageUnit(db, accountId, month)) ? month : null
      },
      release: (accountId, month) => releaseMessageUnit(db, accountId, month),
    },
    markForPerson: markConversationForPerson,
    // never the key or the full address: the account, the endpoint's host, the model and what went wrong
    logFailure: (data) => logger.warn(data, 'AI endpoint call failed'),
    async tagNames(accountId) {
      const counts = await contacts.tagCounts({ accountId, account: { plan: '', language: '' } })
      return counts.tags.filter((t) => t.origin !== 'system').map((t) => t.name)
    },
    async addTag(tx, input) {
      const result = await changeContactTag(tx, clock, { ...input, change: 'add', origin: 'ki' })
      return result.changed
    },
  })
  return { service, http }
}

export const knowledgeModule: HeroldModule<
  { knowledge: KnowledgeService; ai: AiService },
  { inbound: InboundListener; contactCleanup: ContactCleanup }
> = {
  name: 'knowledge',
  reactions: {
    inbound: aiInbound,
    // DELETE /contacts/{id}: the AI's records of the contact (questions, replies) go too
    contactCleanup: deleteContactAiRecords,
  },
  tools: knowledgeTools,
  routes: (_deps, services) => {
    return async (app) => {
      await knowledgeRoutes(services)(app)
      await aiRoutes(services)(app)
    }
  },
  // the web app shows a document's passages (GET /app/knowledge/documents/{id}/passages) and asks the AI a test
  // question (POST /app/knowledge/ask)
  appRoutes: (_deps, services) => knowledgeAppRoutes(services),
  jobs: (_deps, { ai }) => ({
    handlers: {
      [AI_REPLY_QUEUE]: { run: (job) => ai.reply(job), maxAttempts: 5 },
      [AI_TAGS_QUEUE]: { run: (job) => ai.suggestTags(job), maxAttempts: 3 },
    },
  }),
}

export { searchConfigFor, searchRanked } from './knowledge.service.ts'
