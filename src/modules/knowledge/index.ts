import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import { createOutboundHttp } from '../../platform/outbound-http.ts'
import { knowledgeRoutes } from './knowledge.routes.ts'
import { knowledgeService, MAX_DOCUMENT_BYTES } from './knowledge.service.ts'

/** Downloads of the url form: the SSRF guard, no redirects, 15 s, one byte past the limit to tell "too large". */
const DOWNLOAD_TIMEOUT_MS = 15_000

export function knowledgeServiceFor({ config, database, clock }: PlatformDeps) {
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

export const knowledgeModule: HeroldModule = {
  name: 'knowledge',
  routes: (deps) => {
    const { service, http } = knowledgeServiceFor(deps)
    const routes = knowledgeRoutes(service)
    return async (app) => {
      app.addHook('onClose', () => http.close())
      await routes(app)
    }
  },
}

export { searchConfigFor, searchRanked } from './knowledge.service.ts'
