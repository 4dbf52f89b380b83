import type { FastifyInstance } from 'fastify'
import type { PlatformDeps } from '../../platform/module.ts'

/**
 * Routes other modules add under /app (session, CSRF and the app document as for people's own). A file without
 * imports of other modules, so a module may register from its index.ts whatever order the modules load in.
 */
export const extraAppRoutes: Array<(deps: PlatformDeps) => (app: FastifyInstance) => Promise<void>> = []
export function registerAppRoutes(routes: (deps: PlatformDeps) => (app: FastifyInstance) => Promise<void>): void {
  extraAppRoutes.push(routes)
}
