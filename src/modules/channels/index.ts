import type { Db } from '../../platform/db/client.ts'
import { groupCommit } from '../../platform/jobs/group-commit.ts'
import { type ClaimedJob, completeJobs } from '../../platform/jobs/jobs.ts'
import type { JobHandler } from '../../platform/jobs/runner.ts'
import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import { createOutboundHttp } from '../../platform/outbound-http.ts'
import { secretBoxFor } from '../../platform/secrets.ts'
import type { DeletionConfirmation } from '../contacts/index.ts'
import type { InboxService } from '../inbox/index.ts'
import { channelsAppRoutes } from './channels.app.ts'
import {
  DELETION_CONFIRMATION_QUEUE,
  deletionConfirmationHandler,
  queueDeletionConfirmation,
} from './channels.deletion-confirmation.ts'
import { channelsRoutes, hookRoutes } from './channels.routes.ts'
import { type ChannelsService, type ChannelsServiceDeps, channelsService } from './channels.service.ts'
import { channelsTools } from './channels.tools.ts'
import { createPacer } from './pacer.ts'
import { SANDBOX_STATUS_QUEUE, sandboxChatProvider } from './sandbox.provider.ts'
import { smtpEmailProvider } from './smtp.provider.ts'
import { whatsAppCloudProvider } from './whatsapp-cloud.provider.ts'

/** WhatsApp media may be up to 100 MB. */
const MAX_MEDIA_BYTES = 100 * 1024 * 1024

/** What the channels service needs of other modules: the inbox it records into, where template decisions go. */
export interface ChannelsNeeds {
  inbox: ChannelsServiceDeps['inbox'] & Pick<InboxService, 'lastInboundAt'>
  /** the template decisions a provider's webhook carries (the templates module applies them) */
  templateStatuses: NonNullable<ChannelsServiceDeps['templateStatuses']>
}

/** The channels service of a process; the composition root builds one, so its pacer is shared by every caller. */
export function createChannelsService(deps: PlatformDeps, needs: ChannelsNeeds) {
  const { config, database, clock } = deps
  const db = database.orm
  const { inbox } = needs
  const http = createOutboundHttp({
    allowPrivateTargets: config.allowPrivateTargets,
    maxResponseBytes: MAX_MEDIA_BYTES,
  })
  return channelsService({
    db,
    clock,
    secrets: secretBoxFor(config),
    pacer: createPacer(clock, { db, burstMs: config.paceBurstMs, exclusive: database.kind === 'pglite' }),
    publicUrl: config.publicUrl,
    inbox,
    templateStatuses: needs.templateStatuses,
    smtp: (url) => smtpEmailProvider({ url }),
    chatProviders: {
      sandbox: sandboxChatProvider({
        db,
        clock,
        lastInboundAt: (accountId, contactId) => inbox.lastInboundAt(accountId, contactId, 'chat'),
      }),
      'whatsapp-cloud': whatsAppCloudProvider({ graphUrl: config.whatsappGraphUrl, http }),
    },
  })
}

/** One status for the messages of one sandbox batch (`providerMessageIds`); jobs queued before carry one id. */
type SandboxStatusJob = { providerMessageId?: string; providerMessageIds?: string[]; status: 'delivered' | 'read' }

/**
 * The sandbox's simulated delivered/read statuses. Status jobs claimed together are applied in one transaction
 * (per account, in claim order, so a delivered before its read stays in order) that also finishes the jobs: a
 * handful of statements per batch instead of seven per status. A failing batch falls back to one job at a time,
 * so one bad job (or one lost lease) does not hold back the others.
 */
function sandboxStatusHandler(inbox: Pick<InboxService, 'applyStatusesIn'>): JobHandler {
  const applyIn = async (tx: Db, jobs: ClaimedJob[]) => {
    const byAccount = new Map<string, ClaimedJob[]>()
    for (const job of jobs) byAccount.set(job.accountId, [...(byAccount.get(job.accountId) ?? []), job])
    for (const [accountId, ofAccount] of byAccount) {
      await inbox.applyStatusesIn(
        tx,
        accountId,
        ofAccount.flatMap((job) => {
          const { providerMessageId, providerMessageIds, status } = job.payload as SandboxStatusJob
          return (providerMessageIds ?? (providerMessageId ? [providerMessageId] : [])).map((id) => ({
            channel: 'chat' as const,
            providerMessageId: id,
            status,
            errorCode: null,
            optedOut: false,
          }))
        }),
      )
    }
    await completeJobs(tx, jobs)
  }
  const apply = groupCommit(async (batch: Array<{ job: ClaimedJob; db: Db }>) => {
    const db = batch[0].db
    const jobs = batch.map((b) => b.job)
    try {
      await db.transaction((tx) => applyIn(tx, jobs))
      return jobs.map(() => null)
    } catch {
      return Promise.all(
        jobs.map((job) =>
          db
            .transaction((tx) => applyIn(tx, [job]))
            .then(
              () => null,
              (error: unknown) => error,
            ),
        ),
      )
    }
  })
  return {
    async run(job, context) {
      const error = await apply({ job, db: context.db })
      if (error) throw error
      context.settled()
    },
  }
}

export const channelsModule: HeroldModule<
  { channels: ChannelsService; inbox: Pick<InboxService, 'applyStatusesIn'> },
  { deletionConfirmation: DeletionConfirmation }
> = {
  name: 'channels',
  // a contact who asked for their deletion (DELETE /contacts/{id}) is told by e-mail, through a durable job
  reactions: { deletionConfirmation: queueDeletionConfirmation },
  // the sandbox's outbox after the sandbox's own retention period
  retention: {
    deletes: [
      { table: 'sandbox_outbox', statement: 'DELETE FROM sandbox_outbox WHERE created_at < $1', cutoff: 'sandbox' },
    ],
    churn: ['sandbox_outbox'],
  },
  tools: channelsTools,
  routes: (_deps, { channels }) => channelsRoutes(channels),
  // the web app's channel page: the chat number's state and daily limit (GET /app/channels/chat)
  appRoutes: (_deps, { channels }) => channelsAppRoutes(channels),
  publicRoutes: (_deps, { channels }) => hookRoutes(channels),
  jobs: (_deps, { channels, inbox }) => ({
    handlers: {
      [DELETION_CONFIRMATION_QUEUE]: deletionConfirmationHandler(() => channels),
      // the sandbox reports delivered and read like the Cloud API's status webhooks
      [SANDBOX_STATUS_QUEUE]: sandboxStatusHandler(inbox),
    },
  }),
}

export { PAIR_RATE_REFUSED, type TemplateStatusUpdate, THROUGHPUT_REFUSED } from './channels.provider.ts'
export type { BatchSendOutcome, ChannelsService, ConnectInput, SendOutcome } from './channels.service.ts'
export { CHAT_LANE } from './pacer.ts'
export { sandboxOutboxOf } from './sandbox.provider.ts'
export { type EdgeVariables, variablesAtEdges } from './whatsapp.rules.ts'
