import type { FastifyInstance } from 'fastify'
import type { Retention } from './db/maintenance.ts'
import type { PlatformDeps } from './deps.ts'
import type { ModuleJobs } from './jobs/runner.ts'
import type { Tool } from './tools/tool.ts'

export type { PlatformDeps }

type Plugin = (app: FastifyInstance) => Promise<void>

/**
 * A vertical slice. `S` is what it needs of the built services (its own and the few of other modules it calls), as
 * narrow interfaces it declares itself; the composition root (src/services.ts) builds every service once and hands
 * them in, so a module's routes, jobs and workers never build a service. `R` is what it reacts to (`reactions`).
 */
export interface HeroldModule<S = unknown, R = never> {
  name: string
  /**
   * what it reacts to of other modules' happenings, by kind (a contact deleted, a message received, a signal, a
   * template's or a media file's deletion asked…): one handler or a list per kind, each typed by the module the kind
   * belongs to (the kinds: `Reactions` in src/services.ts). The composition root collects every module's reactions and
   * hands each kind to the module that runs it, as a part of what that module's service is built with; no module fills
   * another's list when it is imported.
   */
  reactions?: R
  /** its REST routes, mounted under /v1 */
  routes?: (deps: PlatformDeps, services: S) => Plugin
  /**
   * its web app routes, mounted under /app behind the session and its CSRF token (src/platform/http/app-routes.ts):
   * not part of the public API, described in the second OpenAPI document; they declare `config.scope` as /v1 routes
   * do, or `config.permission`
   */
  appRoutes?: (deps: PlatformDeps, services: S) => Plugin
  /**
   * routes outside /v1 that are not part of the public REST API: provider webhooks (authenticated by the
   * provider's signature) and public files such as inbound media; mounted at the root
   */
  publicRoutes?: (deps: PlatformDeps, services: S) => Plugin
  /** its background workers, started in the worker role; each returns a stop function */
  workers?: (deps: PlatformDeps, services: S) => Array<() => Promise<() => Promise<void>>>
  /** its durable job queues, run by the process's one job runner in the worker role */
  jobs?: (deps: PlatformDeps, services: S) => ModuleJobs
  /** the upkeep of its own tables: what retention deletes and when, which tables churn; run by maintenance */
  retention?: Retention
  /** its tools of the tool server (`<domain>.tools.ts`), one per REST operation; src/mcp serves them */
  tools?: Tool[]
}

export type { ModuleJobs }
