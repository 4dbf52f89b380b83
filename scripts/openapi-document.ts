import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { systemClock } from '../src/platform/clock.ts'
import { openDatabase } from '../src/platform/db/client.ts'
import { memoryRateLimiter } from '../src/platform/rate-limit/rate-limiter.ts'

/** The document as the code describes it, for the default configuration (what openapi/v1.json holds). */
export async function generateOpenApiDocument(): Promise<string> {
  const database = await openDatabase({ dataDir: 'memory://' })
  const app = await buildApp({ config: loadConfig({}), database, clock: systemClock, rateLimiter: memoryRateLimiter() })
  try {
    await app.ready()
    return `${JSON.stringify(app.swagger(), null, 2)}\n`
  } finally {
    await app.close()
    await database.close()
  }
}

/** The web app's own routes (/app), the second document (openapi/app.json). */
export async function generateAppDocument(): Promise<string> {
  const database = await openDatabase({ dataDir: 'memory://' })
  const app = await buildApp({ config: loadConfig({}), database, clock: systemClock, rateLimiter: memoryRateLimiter() })
  try {
    const response = await app.inject({ method: 'GET', url: '/app/openapi.json' })
    return `${JSON.stringify(response.json(), null, 2)}\n`
  } finally {
    await app.close()
    await database.close()
  }
}
