import { timingSafeEqual } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { type Static, Type } from 'typebox'
import type { Config } from '../config.ts'
import type { Database } from '../platform/db/client.ts'
import { AdminError, dataCommands } from './commands.ts'

const Body = Type.Object({
  command: Type.String(),
  values: Type.Record(Type.String(), Type.Union([Type.String(), Type.Boolean()])),
  positionals: Type.Array(Type.String()),
})

function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}

/**
 * The embedded database has one connection, held by the server: the CLI runs its commands here instead.
 * Loopback only, and only with the token the server wrote into its data directory.
 */
export function adminEndpoint(database: Database, token: string, config?: Config) {
  return async (app: FastifyInstance) => {
    app.post(
      '/_admin/command',
      { config: { public: true }, schema: { hide: true, body: Body } },
      async (request, reply) => {
        const given = request.headers['x-herold-admin-token']
        // the connection and the client (a request a trusted proxy forwards from elsewhere is not on loopback)
        const loopback = [request.socket.remoteAddress, request.ip].every((address) =>
          ['127.0.0.1', '::1', '::ffff:127.0.0.1'].includes(address ?? ''),
        )
        if (!loopback || typeof given !== 'string' || !sameToken(given, token)) {
          return reply.code(403).send({ error: { code: 'forbidden', key: 'forbidden', message: 'Not allowed' } })
        }
        const { command, values, positionals } = request.body as Static<typeof Body>
        const definition = dataCommands[command]
        if (!definition)
          return reply
            .code(400)
            .send({ error: { code: 'bad_request', key: 'bad_request', message: `unknown command ${command}` } })
        try {
          return { ok: true, result: await definition.run(database, values, positionals, { config }) }
        } catch (error) {
          if (error instanceof AdminError)
            return reply.code(400).send({ error: { code: 'bad_request', key: 'bad_request', message: error.message } })
          throw error
        }
      },
    )
  }
}
