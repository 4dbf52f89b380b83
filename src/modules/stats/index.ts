import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import { statsRoutes } from './stats.routes.ts'
import { ROLLUP_EVERY_MS, type StatsService, statsService } from './stats.service.ts'
import { statsTools } from './stats.tools.ts'

export function createStatsService(deps: PlatformDeps) {
  return statsService({ database: deps.database, clock: deps.clock })
}

export const statsModule: HeroldModule<{ stats: StatsService }> = {
  name: 'stats',
  tools: statsTools,
  routes: (_deps, { stats }) => statsRoutes(stats),
  // The rollup keeps stats_deltas small; a read is exact without it (it adds what is not rolled up yet).
  workers: (_deps, { stats: service }) => [
    async () => {
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
