import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import { channelsServiceFor } from '../channels/index.ts'
import { contactsService, registerContactCleanup } from '../contacts/index.ts'
import { deleteContactLinks } from './messaging.repository.ts'
import { linkRoutes, messagingRoutes } from './messaging.routes.ts'
import { messagingService } from './messaging.service.ts'

registerContactCleanup(deleteContactLinks)

export function messagingServiceFor(deps: PlatformDeps) {
  const { config, database, clock } = deps
  const db = database.orm
  return messagingService({
    db,
    clock,
    // only get() is used: contact deletion is not reached from here
    contacts: contactsService({ db, clock, deletion: { cleanups: [], confirmation: null } }),
    channels: channelsServiceFor(deps),
    serviceName: config.serviceName,
    publicUrl: config.publicUrl,
  })
}

export const messagingModule: HeroldModule = {
  name: 'messaging',
  routes: (deps) => messagingRoutes(messagingServiceFor(deps)),
  publicRoutes: (deps) => linkRoutes(messagingServiceFor(deps)),
}
