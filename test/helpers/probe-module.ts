import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { AppError } from '../../src/platform/http/errors.ts'
import type { HeroldModule } from '../../src/platform/module.ts'

/**
 * Routes that exist only in tests, declared exactly as a module declares its routes, so the shared rules of the
 * pipeline (idempotency, envelope, body limits) can be checked without depending on any one domain module.
 */
export function probeModule() {
  const state = { executions: 0, release: null as null | (() => void) }
  const module: HeroldModule = {
    name: 'probe',
    routes: () => async (app: FastifyInstance) => {
      app.post(
        '/_probe/things',
        {
          config: { scope: 'contacts:write', idempotent: true },
          schema: {
            body: Type.Object({
              name: Type.String({ maxLength: 20 }),
              wait: Type.Optional(Type.Boolean()),
              fail: Type.Optional(Type.Integer({ minimum: 400, maximum: 599 })),
            }),
            querystring: Type.Object({ flag: Type.Optional(Type.Boolean()) }),
          },
        },
        async (request, reply) => {
          state.executions += 1
          const body = request.body as { name: string; wait?: boolean; fail?: number }
          if (body.wait) await new Promise<void>((resolve) => (state.release = resolve))
          if (body.fail) throw new AppError(body.fail, 'probe_failure', 'the probe was asked to fail')
          return reply.code(201).send({ ok: true, execution: state.executions, name: body.name })
        },
      )
      app.get('/_probe/crash', { config: {} }, async () => {
        throw new Error('secret internal detail at /srv/app.ts:12')
      })
    },
  }
  return { module, state }
}
