import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import { channelsServiceFor } from '../channels/index.ts'
import { contactsService } from '../contacts/index.ts'
import { messagingRoutes } from './messaging.routes.ts'
import { messagingService } from './messaging.service.ts'

export function messagingServiceFor(deps: PlatformDeps) {
  const { database, clock } = deps
  const db = database.orm
  return messagingService({
    db,
    clock,
    // only get() is used: contact deletion is not reached from here
    contacts: contactsService({ db, clock, deletion: { cleanups: [], confirmation: null } }),
    channels: channelsServiceFor(deps),
  })
}

export const messagingModule: HeroldModule = {
  name: 'messaging',
  routes: (deps) => messagingRoutes(messagingServiceFor(deps)),
}
