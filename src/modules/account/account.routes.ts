import type { FastifyInstance } from 'fastify'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import { MeResponse } from './account.schemas.ts'
import type { AccountService } from './account.service.ts'

/** The services the account's operations call. */
export interface AccountServices {
  account: AccountService
}

const operation = operationsUsing<AccountServices>()

export const getMe = operation({
  method: 'GET',
  path: '/me',
  operationId: 'getMe',
  summary: 'The calling credential and its account',
  tags: ['account'],
  response: MeResponse,
  handle: async ({ account }, { tenant }) => account.me(tenant),
})

export function accountRoutes(account: AccountService) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, { account }, [getMe])
  }
}
