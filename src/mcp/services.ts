import { automationsServiceFor, buildingBlocks } from '../modules/automations/index.ts'
import { channelsServiceFor } from '../modules/channels/index.ts'
import { consentServiceFor } from '../modules/consent/index.ts'
import { contactsServiceFor } from '../modules/contacts/index.ts'
import { followupsServiceFor } from '../modules/followups/index.ts'
import { inboxServiceFor } from '../modules/inbox/index.ts'
import { aiServiceFor, knowledgeServiceFor } from '../modules/knowledge/index.ts'
import { mediaServiceFor } from '../modules/media/index.ts'
import { messagingServiceFor } from '../modules/messaging/index.ts'
import { newslettersServiceFor } from '../modules/newsletters/index.ts'
import { statsServiceFor } from '../modules/stats/index.ts'
import { templatesServiceFor } from '../modules/templates/index.ts'
import { webhooksServiceFor } from '../modules/webhooks/index.ts'
import type { PlatformDeps } from '../platform/module.ts'
import { createOutboundHttp } from '../platform/outbound-http.ts'

/**
 * The module services the tools call, built as the modules' own routes build them (each module's exported
 * `…ServiceFor`), so a tool follows exactly the rules of the REST operation behind it. Each module's tools
 * (`<domain>.tools.ts`) declare the few of these they call (`toolsUsing<Services>()`); the tool server hands in all.
 */
export function toolServicesFor(deps: PlatformDeps) {
  const http = createOutboundHttp({ allowPrivateTargets: deps.config.allowPrivateTargets })
  const knowledge = knowledgeServiceFor(deps)
  const ai = aiServiceFor(deps)
  return {
    contacts: contactsServiceFor(deps),
    messaging: messagingServiceFor(deps),
    inbox: inboxServiceFor(deps),
    templates: templatesServiceFor(deps),
    newsletters: newslettersServiceFor(deps),
    webhooks: webhooksServiceFor(deps),
    automations: automationsServiceFor(deps, http),
    channels: channelsServiceFor(deps),
    consent: consentServiceFor(deps),
    followups: followupsServiceFor(deps),
    media: mediaServiceFor(deps),
    knowledge: knowledge.service,
    ai: ai.service,
    stats: statsServiceFor(deps),
    automationBlocks: buildingBlocks,
    close: async () => {
      await http.close()
      await knowledge.http.close()
      await ai.http.close()
    },
  }
}

export type ToolServices = ReturnType<typeof toolServicesFor>
