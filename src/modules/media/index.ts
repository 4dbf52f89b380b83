import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import { createOutboundHttp } from '../../platform/outbound-http.ts'
import { storageOf } from '../../platform/storage/storage.ts'
import { mediaRoutes } from './media.routes.ts'
import { type MediaUsageCheck, mediaService } from './media.service.ts'

const usageChecks: MediaUsageCheck[] = []

/**
 * Modules whose records refer to media (templates' header image today; newsletters, follow-up steps and the landing
 * page when they carry one) register here from their index.ts: DELETE /media/{id} is a 409 while any answers.
 */
export function registerMediaUsageCheck(check: MediaUsageCheck): void {
  if (!usageChecks.includes(check)) usageChecks.push(check)
}

export function mediaServiceFor(deps: PlatformDeps) {
  return mediaService({
    db: deps.database.orm,
    clock: deps.clock,
    storage: storageOf(deps.config),
    // a download may take a while: 5 s to connect and get the headers, then 30 s at most between two chunks
    http: createOutboundHttp({ allowPrivateTargets: deps.config.allowPrivateTargets }),
    publicUrl: deps.config.publicUrl,
    usageChecks,
    allowPlainHttp: deps.config.allowPrivateTargets,
  })
}

export const mediaModule: HeroldModule = {
  name: 'media',
  routes: (deps) => mediaRoutes(mediaServiceFor(deps)),
}

export type { MediaUsageCheck } from './media.service.ts'
