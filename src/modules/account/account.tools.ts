import { operationTools } from '../../platform/tools/from-operation.ts'
import { getAccount, getUsage, updateAccount } from './account.app.ts'
import { type AccountServices, getMe } from './account.routes.ts'

const tool = operationTools<AccountServices>()

export const accountTools = [
  tool(getMe, {
    name: 'get_account',
    title: 'Who am I',
    description:
      'The account this credential belongs to (id, name), how it is authenticated (api_key or oauth), its scopes and its rate limit. Call it first to learn what the other tools may do.',
  }),
  tool(getAccount, {
    name: 'get_account_settings',
    title: 'Account settings',
    description:
      'The account’s name, plan, default language (of new contacts and templates), timezone (of the monthly quota and follow-up times) and whether sending is paused.',
  }),
  tool(updateAccount, {
    name: 'update_account_settings',
    title: 'Change the account settings',
    description:
      'Change the account’s name (1-120), default language (such as de, en or en_US) or timezone (IANA name such as Europe/Berlin); only given fields change. The timezone decides the month of the message quota and the follow-up send times.',
  }),
  tool(getUsage, {
    name: 'get_usage',
    description:
      'What the plan allows and how much is used: messages this month (in the account’s timezone), contacts and webhook subscriptions, each with used, limit and left, and the API rate limit.',
  }),
]
