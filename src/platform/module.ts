import type { FastifyInstance } from 'fastify'
import type { Config } from '../config.ts'
import type { Clock } from './clock.ts'
import type { Database } from './db/client.ts'
import type { JobHandlers } from './jobs/runner.ts'
import type { RateLimiter } from './rate-limit/rate-limiter.ts'
import type { Tool } from './tools/tool.ts'

/** What the platform hands every module. */
export interface PlatformDeps {
  config: Config
  database: Database
  clock: Clock
  /** the process's rate limiter (absent in workers and scripts) */
  rateLimiter?: RateLimiter
}

/** A vertical slice: it wires itself from the platform's dependencies. */
export interface HeroldModule {
  name: string
  /** its REST routes, mounted under /v1 */
  routes?: (deps: PlatformDeps) => (app: FastifyInstance) => Promise<void>
  /**
   * routes outside /v1 that are not part of the public REST API: provider webhooks (authenticated by the
   * provider's signature) and public files such as inbound media; mounted at the root
   */
  publicRoutes?: (deps: PlatformDeps) => (app: FastifyInstance) => Promise<void>
  /** its background workers, started in the worker role; each returns a stop function */
  workers?: (deps: PlatformDeps) => Array<() => Promise<() => Promise<void>>>
  /** its durable job queues, run by the process's one job runner in the worker role */
  jobs?: (deps: PlatformDeps) => ModuleJobs
  /** its tools of the tool server (`<domain>.tools.ts`), one per REST operation; src/mcp serves them */
  tools?: Tool[]
}

export interface ModuleJobs {
  handlers: JobHandlers
  /** frees what the handlers hold (HTTP connection pools), after the runner stopped */
  close?: () => Promise<void>
}
