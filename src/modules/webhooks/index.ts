import { EVENT_DISPATCH_QUEUE, type EventFanOut } from '../../platform/events/events.ts'
import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import { createOutboundHttp } from '../../platform/outbound-http.ts'
import { secretBoxFor } from '../../platform/secrets.ts'
import { webhooksRoutes } from './webhooks.routes.ts'
import { DELIVERY_QUEUE, type WebhooksService, webhooksService } from './webhooks.service.ts'
import { webhooksTools } from './webhooks.tools.ts'
import { deliverHandler, dispatchHandler, webhookFanOut } from './webhooks.worker.ts'

/** The webhook subscriptions service of a process. */
export function createWebhooksService({ config, database, clock }: PlatformDeps) {
  return webhooksService({
    db: database.orm,
    clock,
    secrets: secretBoxFor(config),
    allowPrivateTargets: config.allowPrivateTargets,
  })
}

export const webhooksModule: HeroldModule<{ webhooks: WebhooksService }, { eventsRecorded: EventFanOut }> = {
  name: 'webhooks',
  // every recorded event's deliveries are written in its own transaction (the dispatch queue stays for jobs written
  // before this, and for a process that records events without this module)
  reactions: { eventsRecorded: webhookFanOut },
  // finished deliveries and every attempt after the retention period; attempts first, they point at deliveries
  retention: {
    deletes: [
      {
        table: 'webhook_delivery_attempts',
        statement: 'DELETE FROM webhook_delivery_attempts WHERE attempted_at < $1',
        cutoff: 'retention',
      },
      {
        table: 'webhook_deliveries',
        statement: "DELETE FROM webhook_deliveries WHERE state <> 'pending' AND finished_at < $1",
        cutoff: 'retention',
      },
    ],
    churn: ['webhook_deliveries', 'webhook_delivery_attempts'],
  },
  tools: webhooksTools,
  routes: (_deps, services) => webhooksRoutes(services),
  jobs: ({ config, clock }) => {
    const http = createOutboundHttp({ allowPrivateTargets: config.allowPrivateTargets })
    return {
      handlers: {
        [EVENT_DISPATCH_QUEUE]: dispatchHandler({ clock }),
        [DELIVERY_QUEUE]: deliverHandler({
          clock,
          secrets: secretBoxFor(config),
          http,
          workerConcurrency: config.workerConcurrency,
        }),
      },
      close: () => http.close(),
    }
  },
}
export { countSubscriptions as countWebhookSubscriptions } from './webhooks.repository.ts'
export { checkSubscriptionUrl, generateSigningSecret, signatureHeader, USER_AGENT } from './webhooks.rules.ts'
