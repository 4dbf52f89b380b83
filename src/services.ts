import { buildingBlocks, createAutomationsService } from './modules/automations/index.ts'
import { createChannelsService } from './modules/channels/index.ts'
import { createConsentService } from './modules/consent/index.ts'
import { createContactsService } from './modules/contacts/index.ts'
import { createFollowupsService } from './modules/followups/index.ts'
import { createInboxService } from './modules/inbox/index.ts'
import { modules } from './modules/index.ts'
import { createAiService, createKnowledgeService } from './modules/knowledge/index.ts'
import { createMediaService } from './modules/media/index.ts'
import { createMessagingService, createTemplateSends } from './modules/messaging/index.ts'
import { createNewslettersService } from './modules/newsletters/index.ts'
import { createPeopleService } from './modules/people/index.ts'
import { createStatsService } from './modules/stats/index.ts'
import { createTemplatesService, templateDecisions } from './modules/templates/index.ts'
import { createWebhooksService } from './modules/webhooks/index.ts'
import { configureMetrics } from './platform/metrics/metrics.ts'
import type { HeroldModule, PlatformDeps } from './platform/module.ts'
import { createOutboundHttp } from './platform/outbound-http.ts'

/**
 * The composition root: every module service of a process, built once, in dependency order, each handed the few
 * functions it declares it needs of the others (its factory's narrow `Pick`s). The routes, web-app routes, jobs,
 * workers and tools of every module receive these; nothing else builds a service. `close()` ends their outbound
 * clients, after the app and the workers have stopped.
 */
export function buildServices(deps: PlatformDeps) {
  configureMetrics({ perAccount: deps.config.metricsPerAccount })
  const contacts = createContactsService(deps)
  const inbox = createInboxService(deps)
  // channels hands the provider's template decisions to templates, which is built on channels: called only later
  const channels = createChannelsService(deps, {
    inbox,
    templateStatuses: (accountId, updates) => templateDecisions(templates)(accountId, updates),
  })
  const templates = createTemplatesService(deps, { channels })
  const people = createPeopleService(deps, { channels })
  const templateSends = createTemplateSends(deps, { contacts, channels, templates })
  const messaging = createMessagingService(deps, { contacts, channels, sends: templateSends })
  const consent = createConsentService(deps, { channels, contacts })
  const followups = createFollowupsService(deps, { templates, channels })
  const newsletters = createNewslettersService(deps, { templates, channels })
  const automationsHttp = createOutboundHttp({ allowPrivateTargets: deps.config.allowPrivateTargets })
  const automations = createAutomationsService(deps, { templates, messaging, channels, http: automationsHttp })
  const media = createMediaService(deps)
  const knowledge = createKnowledgeService(deps)
  const ai = createAiService(deps, { contacts, channels })
  return {
    contacts,
    inbox,
    channels,
    templates,
    people,
    templateSends,
    messaging,
    consent,
    followups,
    newsletters,
    automations,
    automationBlocks: buildingBlocks,
    webhooks: createWebhooksService(deps),
    media: media.service,
    knowledge: knowledge.service,
    ai: ai.service,
    stats: createStatsService(deps),
    async close() {
      await channels.close()
      for (const http of [automationsHttp, media.http, knowledge.http, ai.http]) await http.close()
    },
  }
}

export type Services = ReturnType<typeof buildServices>

/** A module as the root mounts it: what it declares it needs is a part of the built services (checked here). */
export type MountedModule = HeroldModule<Services>

/** Every module, in mounting order. */
export const mountedModules: MountedModule[] = modules

/** The modules' job queues with the built services handed in, as the process's job runner takes them. */
export function moduleJobs(mounted: MountedModule[], services: Services) {
  return mounted.flatMap(({ jobs }) => (jobs ? [{ jobs: (deps: PlatformDeps) => jobs(deps, services) }] : []))
}

/** The modules' background workers with the built services handed in. */
export function moduleWorkers(mounted: MountedModule[], deps: PlatformDeps, services: Services) {
  return mounted.flatMap((module) => module.workers?.(deps, services) ?? [])
}
