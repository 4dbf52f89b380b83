import { createAccountService } from './modules/account/index.ts'
import { buildingBlocks, createAutomationsService } from './modules/automations/index.ts'
import { createChannelsService } from './modules/channels/index.ts'
import { createConsentService } from './modules/consent/index.ts'
import { type ContactCleanup, createContactsService, type DeletionConfirmation } from './modules/contacts/index.ts'
import { createFollowupsService } from './modules/followups/index.ts'
import {
  type ChatOptOut,
  createInboxService,
  type InboundListener,
  type MessageStatusListener,
} from './modules/inbox/index.ts'
import { modules } from './modules/index.ts'
import { createAiService, createKnowledgeService } from './modules/knowledge/index.ts'
import { createMediaService, type MediaUsageCheck } from './modules/media/index.ts'
import { createMessagingService, createTemplateSends } from './modules/messaging/index.ts'
import { createNewslettersService } from './modules/newsletters/index.ts'
import { createPeopleService, type MemberLeft } from './modules/people/index.ts'
import { createRepliesService } from './modules/replies/index.ts'
import { createStatsService } from './modules/stats/index.ts'
import {
  createTemplatesService,
  type OptinTemplateApproved,
  type TemplateUsageCheck,
  templateDecisions,
} from './modules/templates/index.ts'
import { createWebhooksService } from './modules/webhooks/index.ts'
import { type EventFanOut, setEventFanOuts } from './platform/events/events.ts'
import { type SignalListener, setSignalListeners } from './platform/events/signals.ts'
import { configureMetrics } from './platform/metrics/metrics.ts'
import type { HeroldModule, PlatformDeps } from './platform/module.ts'
import { createOutboundHttp } from './platform/outbound-http.ts'

/**
 * Every kind of happening a module may react to (its `reactions`, src/platform/module.ts), typed by the module that
 * runs the reactions: the composition root hands each kind to that module's service.
 */
export interface Reactions {
  /** contacts: DELETE /contacts/{id} removes the module's rows about the contact, counted in `removed` */
  contactCleanup: ContactCleanup
  /** contacts: how a deletion the contact asked for is confirmed to them (one module) */
  deletionConfirmation: DeletionConfirmation
  /** inbox: an inbound message, inside the transaction that stores it */
  inbound: InboundListener
  /** inbox: the one chat opt-out path, of provider opt-outs and STOP (one module) */
  chatOptOut: ChatOptOut
  /** inbox: provider statuses of outbound messages */
  messageStatus: MessageStatusListener
  /** people: a member removed from the account or made a viewer, inside the transaction of the change */
  memberLeft: MemberLeft
  /** templates: a template's uses; DELETE /templates/{id} is a 409 template_in_use while any */
  templateUsage: TemplateUsageCheck
  /** templates: an opt-in confirmation template approved, in the transaction that records it */
  optinTemplateApproved: OptinTemplateApproved
  /** media: a file's uses; DELETE /media/{id} is a 409 while any */
  mediaUsage: MediaUsageCheck
  /** platform: signals (contact created, opt-in confirmed, tag added…), inside the transaction of the change */
  signals: SignalListener
  /** platform: recorded events, handed on in their own transaction */
  eventsRecorded: EventFanOut
}

/** What a module may declare it reacts to: per kind, one reaction or a list. */
export type ModuleReactions = { [K in keyof Reactions]?: Reactions[K] | readonly Reactions[K][] }

/** A module as far as its reactions go (the root's modules and the extra modules of tests). */
type Reacting = { name: string; reactions?: ModuleReactions }

/**
 * The order in which the modules' reactions run: the order their services are built in, each after the modules it
 * builds on (a module not named here, such as a test's, comes last; test/platform/module-contract.test.ts checks that
 * every module with reactions is named).
 */
export const REACTION_ORDER: readonly string[] = [
  'inbox',
  'channels',
  'templates',
  'messaging',
  'consent',
  'followups',
  'newsletters',
  'automations',
  'webhooks',
  'media',
  'knowledge',
  'replies',
]

/** Who runs each kind of reaction, and when: the module (or platform part) that hands it to its service. */
export const REACTION_KINDS: { [K in keyof Reactions]: { runBy: string; when: string } } = {
  contactCleanup: { runBy: 'contacts', when: 'DELETE /contacts/{id}: removes the rows about the contact (`removed`)' },
  deletionConfirmation: { runBy: 'contacts', when: 'a deletion the contact asked for is confirmed to them (one)' },
  inbound: { runBy: 'inbox', when: 'an inbound message, in the transaction that stores it' },
  chatOptOut: { runBy: 'inbox', when: "a chat opt-out, the provider's (131050) or STOP (one)" },
  messageStatus: { runBy: 'inbox', when: 'provider statuses of outbound messages' },
  memberLeft: { runBy: 'people', when: 'a member removed or made a viewer, in the transaction of the change' },
  templateUsage: { runBy: 'templates', when: 'DELETE /templates/{id}: `409 template_in_use` while any use' },
  optinTemplateApproved: { runBy: 'templates', when: 'an opt-in confirmation template approved' },
  mediaUsage: { runBy: 'media', when: 'DELETE /media/{id}: `409 media_in_use` while any use' },
  signals: { runBy: 'platform/events', when: 'contact created, message received, opt-in confirmed, tag added…' },
  eventsRecorded: { runBy: 'platform/events', when: 'recorded events, in their own transaction' },
}

/** The modules in the order their reactions run (REACTION_ORDER, then the others in mounting order). */
export function inReactionOrder<M extends Reacting>(mounted: readonly M[]): M[] {
  const rank = (name: string) => (REACTION_ORDER.includes(name) ? REACTION_ORDER.indexOf(name) : REACTION_ORDER.length)
  return [...mounted].sort((a, b) => rank(a.name) - rank(b.name))
}

/** Every module's reactions of each kind, in the order they run. */
export function collectReactions(mounted: readonly Reacting[]): { [K in keyof Reactions]: Reactions[K][] } {
  const ordered = inReactionOrder(mounted)
  const of = (kind: keyof Reactions): unknown[] =>
    ordered.flatMap((module) => {
      const declared: unknown = module.reactions?.[kind]
      if (declared === undefined) return []
      return Array.isArray(declared) ? [...declared] : [declared]
    })
  const kinds = Object.keys(REACTION_KINDS) as Array<keyof Reactions>
  return Object.fromEntries(kinds.map((kind) => [kind, of(kind)])) as { [K in keyof Reactions]: Reactions[K][] }
}

/**
 * Signals and recorded events are told from inside every module's writes (recordEvent, emitSignals), so the platform
 * keeps the process's one list of their reactions, set here; buildServices does, and a command that writes without
 * the services (the CLI's contact import).
 */
export function setEventReactions(
  reactions: Pick<ReturnType<typeof collectReactions>, 'signals' | 'eventsRecorded'> = collectReactions(modules),
) {
  setSignalListeners(reactions.signals)
  setEventFanOuts(reactions.eventsRecorded)
}

/** The one reaction of a kind that takes one: null without any, an error with two. */
function onlyOne<T>(kind: keyof Reactions, reactions: T[]): T | null {
  if (reactions.length > 1) throw new Error(`more than one module declares reactions.${kind}`)
  return reactions[0] ?? null
}

/**
 * The composition root: every module service of a process, built once, in dependency order, each handed the few
 * functions it declares it needs of the others (its factory's narrow `Pick`s) and what the modules react to in it
 * (their `reactions`, collected from `mounted`). The routes, web-app routes, jobs, workers and tools of every module
 * receive these; nothing else builds a service. `close()` ends their outbound clients, after the app and the workers
 * have stopped.
 */
export function buildServices(deps: PlatformDeps, mounted: readonly Reacting[] = modules) {
  configureMetrics({ perAccount: deps.config.metricsPerAccount })
  const reactions = collectReactions(mounted)
  setEventReactions(reactions)
  const contacts = createContactsService(deps, {
    cleanups: reactions.contactCleanup,
    confirmation: onlyOne('deletionConfirmation', reactions.deletionConfirmation),
  })
  const inbox = createInboxService(deps, {
    inboundListeners: reactions.inbound,
    chatOptOut: onlyOne('chatOptOut', reactions.chatOptOut),
    statusListeners: reactions.messageStatus,
  })
  // channels hands the provider's template decisions to templates, which is built on channels: called only later
  const channels = createChannelsService(deps, {
    inbox,
    templateStatuses: (accountId, updates) => templateDecisions(templates)(accountId, updates),
  })
  const templates = createTemplatesService(deps, {
    channels,
    hooks: { usageChecks: reactions.templateUsage, optinApproved: reactions.optinTemplateApproved },
  })
  const people = createPeopleService(deps, { channels, memberLeft: reactions.memberLeft })
  const templateSends = createTemplateSends(deps, { contacts, channels, templates })
  const messaging = createMessagingService(deps, { contacts, channels, sends: templateSends })
  const consent = createConsentService(deps, { channels, contacts })
  const followups = createFollowupsService(deps, { templates, channels })
  const newsletters = createNewslettersService(deps, { templates, channels })
  const automationsHttp = createOutboundHttp({ allowPrivateTargets: deps.config.allowPrivateTargets })
  const automations = createAutomationsService(deps, { templates, messaging, channels, http: automationsHttp })
  const media = createMediaService(deps, reactions.mediaUsage)
  const knowledge = createKnowledgeService(deps)
  const ai = createAiService(deps, { contacts, channels })
  return {
    account: createAccountService(deps),
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
    replies: createRepliesService(deps),
    async close() {
      await channels.close()
      for (const http of [automationsHttp, media.http, knowledge.http, ai.http]) await http.close()
    },
  }
}

export type Services = ReturnType<typeof buildServices>

/**
 * A module as the root mounts it: what it declares it needs is a part of the built services, what it reacts to is of
 * the kinds of `Reactions` (both checked here).
 */
export type MountedModule = HeroldModule<Services, ModuleReactions>

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
