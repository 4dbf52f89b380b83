import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import { storageFor } from '../../platform/storage/storage.ts'
import { registerContactCleanup } from '../contacts/index.ts'
import { deleteContactMessages } from './inbox.repository.ts'
import { inboxRoutes, mediaRoutes } from './inbox.routes.ts'
import { inboxService } from './inbox.service.ts'

/** The inbox service of a process: storage in the data directory, media addresses under HEROLD_PUBLIC_URL. */
export function inboxServiceFor({ config, database, clock }: PlatformDeps) {
  return inboxService({ db: database.orm, clock, storage: storageFor(config.dataDir), publicUrl: config.publicUrl })
}

// DELETE /contacts/{id} removes the contact's conversations and messages and counts them in `removed`.
registerContactCleanup(deleteContactMessages)

export const inboxModule: HeroldModule = {
  name: 'inbox',
  routes: (deps) => inboxRoutes(inboxServiceFor(deps)),
  publicRoutes: ({ config }) => mediaRoutes(storageFor(config.dataDir)),
}

export type { InboxService, IncomingMessage, IncomingStatus } from './inbox.service.ts'
export { inboxService, messageView, statusAdvances } from './inbox.service.ts'
