import type { FastifyInstance } from 'fastify'
import { MeResponse } from './account.schemas.ts'

export async function accountRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/me',
    {
      schema: {
        operationId: 'getMe',
        summary: 'The calling credential and its account',
        tags: ['account'],
        response: { 200: MeResponse },
      },
    },
    async (request) => {
      const { account, actor } = request.tenant
      return {
        account: { id: account.id, name: account.name },
        key: actor.type === 'api_key' ? { id: actor.keyId, name: actor.keyName, prefix: actor.keyPrefix } : null,
        auth_type: actor.type,
        scopes: actor.scopes,
        rate_limit: { requests_per_minute: actor.requestsPerMinute },
      }
    },
  )
}
