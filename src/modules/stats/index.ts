import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import { statsRoutes } from './stats.routes.ts'
import { ROLLUP_EVERY_MS, statsService } from './stats.service.ts'
import { statsTools } from './stats.tools.ts'

export function statsServiceFor(deps: PlatformDeps) {
  return statsService({ database: deps.database, clock: deps.clock })
}

export const statsModule: HeroldModule = {
  name: 'stats',
  tools: statsTools,
  routes: (deps) => statsRoutes(statsServiceFor(deps)),
  // The rollup keeps stats_deltas small; a read is exact without it (it adds what is not rolled up yet).
  workers: (deps) => [
    async () => {
      const service = statsServiceFor(deps)
      let running: Promise<unknown> | null = null
      const tick = () => {
        running ??= service
          .rollupAll()
          .catch(() => {})
          .finally(() => {
            running = null
          })
      }
      const timer = setInterval(tick, ROLLUP_EVERY_MS)
      timer.unref()
      return async () => {
        clearInterval(timer)
        await running
      }
    },
  ],
}
