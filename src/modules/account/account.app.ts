import type { FastifyInstance } from 'fastify'
import { type Static, Type } from 'typebox'
import type { PlatformDeps } from '../../platform/module.ts'
import { FirstSteps, firstSteps } from './account.first-steps.ts'
import {
  AccountSettings,
  AccountSettingsBody,
  accountSettings,
  Usage,
  updateAccountSettings,
  usage,
} from './account.service.ts'

/** The account's settings page in the web app: name, language, timezone, and usage against the plan. */
export function accountAppRoutes(deps: Pick<PlatformDeps, 'database' | 'clock'>) {
  const db = deps.database.orm
  const tags = ['app']
  return async (app: FastifyInstance): Promise<void> => {
    app.get(
      '/account',
      {
        config: { scope: 'settings:read' },
        schema: {
          operationId: 'getAccount',
          summary: 'The account’s settings',
          description: 'Needs settings:read. Name, plan, language, timezone, whether sending is paused.',
          tags,
          response: { 200: Type.Object({ account: AccountSettings }) },
        },
      },
      async (request) => {
        return { account: await accountSettings(db, request.tenant.accountId) }
      },
    )

    app.patch<{ Body: Static<typeof AccountSettingsBody> }>(
      '/account',
      {
        config: { scope: 'settings:write' },
        schema: {
          operationId: 'updateAccount',
          summary: 'Change the account’s name, language, timezone or country',
          description:
            'Needs settings:write. Only given fields change. language: the default of new contacts and templates; timezone (IANA): the month of the message quota, follow-up and calendar times; country (ISO 3166-1 alpha-2, null: the time zone’s): national phone numbers in imports and the contact form are read in it (400 key country_invalid for an unknown code).',
          tags,
          body: AccountSettingsBody,
          response: { 200: Type.Object({ account: AccountSettings }) },
        },
      },
      async (request) => {
        return { account: await updateAccountSettings(db, request.tenant.accountId, request.body) }
      },
    )

    app.get(
      '/first-steps',
      {
        config: { scope: 'settings:read' },
        schema: {
          operationId: 'getFirstSteps',
          summary: 'What a new account does first, and what is done',
          description:
            'Needs settings:read. Four states from what the account holds: a chat number connected, an approved opt-in template (purpose optin_confirm), at least one contact, a second member (active or invited). One statement.',
          tags,
          response: { 200: FirstSteps },
        },
      },
      async (request) => firstSteps(db, request.tenant.accountId),
    )

    app.get(
      '/usage',
      {
        config: { scope: 'settings:read' },
        schema: {
          operationId: 'getUsage',
          summary: 'Usage against the plan',
          description:
            'Needs settings:read. Messages this month (in the account’s timezone), contacts and webhook subscriptions: used, limit, left; the rate limit.',
          tags,
          response: { 200: Usage },
        },
      },
      async (request) => {
        return usage(db, deps.clock, request.tenant.accountId)
      },
    )
  }
}
