import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import type { AccountServices } from './account.routes.ts'
import { AccountSettings, AccountSettingsBody, FirstSteps, Usage } from './account.schemas.ts'
import type { AccountService } from './account.service.ts'

const operation = operationsUsing<AccountServices>()
const tags = ['app']

export const getAccount = operation({
  method: 'GET',
  path: '/account',
  mount: 'app',
  scope: 'settings:read',
  operationId: 'getAccount',
  summary: 'The account’s settings',
  description: 'Needs settings:read. Name, plan, language, timezone, whether sending is paused.',
  tags,
  response: Type.Object({ account: AccountSettings }),
  handle: async ({ account }, { tenant }) => ({ account: await account.settings(tenant) }),
})

export const updateAccount = operation({
  method: 'PATCH',
  path: '/account',
  mount: 'app',
  scope: 'settings:write',
  operationId: 'updateAccount',
  summary: 'Change the account’s name, language, timezone or country',
  description:
    'Needs settings:write. Only given fields change. language: the default of new contacts and templates; timezone (IANA): the month of the message quota, follow-up and calendar times; country (ISO 3166-1 alpha-2, null: the time zone’s): national phone numbers in imports and the contact form are read in it (400 key country_invalid for an unknown code).',
  tags,
  body: AccountSettingsBody,
  response: Type.Object({ account: AccountSettings }),
  handle: async ({ account }, { tenant, body }) => ({ account: await account.updateSettings(tenant, body) }),
})

export const getFirstSteps = operation({
  method: 'GET',
  path: '/first-steps',
  mount: 'app',
  scope: 'settings:read',
  operationId: 'getFirstSteps',
  summary: 'What a new account does first, and what is done',
  description:
    'Needs settings:read. Four states from what the account holds: a chat number connected, an approved opt-in template (purpose optin_confirm), at least one contact, a second member (active or invited). One statement.',
  tags,
  response: FirstSteps,
  handle: ({ account }, { tenant }) => account.firstSteps(tenant),
})

export const getUsage = operation({
  method: 'GET',
  path: '/usage',
  mount: 'app',
  scope: 'settings:read',
  operationId: 'getUsage',
  summary: 'Usage against the plan',
  description:
    'Needs settings:read. Messages this month (in the account’s timezone), contacts and webhook subscriptions: used, limit, left; the rate limit.',
  tags,
  response: Usage,
  handle: ({ account }, { tenant }) => account.usage(tenant),
})

/** The account's settings page in the web app: name, language, timezone, and usage against the plan. */
export function accountAppRoutes(account: AccountService) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, { account }, [getAccount, updateAccount, getFirstSteps, getUsage])
  }
}
