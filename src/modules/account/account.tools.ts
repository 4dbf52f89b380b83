import { Type } from 'typebox'
import { obj } from '../../platform/tools/outputs.ts'
import { restRule, type ToolContext, toolsUsing } from '../../platform/tools/tool.ts'
import { MeResponse } from './account.schemas.ts'
import {
  AccountSettings,
  AccountSettingsBody,
  accountSettings,
  Usage,
  updateAccountSettings,
  usage,
} from './account.service.ts'

// these tools call the module's own functions, no module service
const defineTool = toolsUsing<unknown>()

const db = (ctx: ToolContext) => ctx.platform.database.orm

export const getAccount = defineTool({
  name: 'get_account',
  title: 'Who am I',
  description:
    'The account this credential belongs to (id, name), how it is authenticated (api_key or oauth), its scopes and its rate limit. Call it first to learn what the other tools may do.',
  scope: null,
  rest: 'GET /me',
  output: MeResponse,
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    const { account, actor } = ctx.tenant
    return {
      account: { id: account.id, name: account.name },
      key: actor.type === 'api_key' ? { id: actor.keyId, name: actor.keyName, prefix: actor.keyPrefix } : null,
      auth_type: actor.type,
      scopes: actor.scopes,
      rate_limit: { requests_per_minute: actor.requestsPerMinute },
    }
  },
})

export const getAccountSettings = defineTool({
  name: 'get_account_settings',
  title: 'Account settings',
  description:
    'The account’s name, plan, default language (of new contacts and templates), timezone (of the monthly quota and follow-up times) and whether sending is paused.',
  scope: 'settings:read',
  rest: 'GET /app/account',
  output: obj({ account: AccountSettings }),
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    return { account: await accountSettings(db(ctx), ctx.tenant.accountId) }
  },
})

export const updateAccountSettingsTool = defineTool({
  name: 'update_account_settings',
  title: 'Change the account settings',
  description:
    'Change the account’s name (1-120), default language (such as de, en or en_US) or timezone (IANA name such as Europe/Berlin); only given fields change. The timezone decides the month of the message quota and the follow-up send times.',
  scope: 'settings:write',
  rest: 'PATCH /app/account',
  output: obj({ account: AccountSettings }),
  kind: 'write',
  idempotent: true,
  input: Type.Object(AccountSettingsBody.properties),
  async run(ctx, args) {
    const body = restRule(AccountSettingsBody, args, 'body')
    return { account: await updateAccountSettings(db(ctx), ctx.tenant.accountId, body) }
  },
})

export const getUsage = defineTool({
  name: 'get_usage',
  title: 'Usage against the plan',
  description:
    'What the plan allows and how much is used: messages this month (in the account’s timezone), contacts and webhook subscriptions, each with used, limit and left, and the API rate limit.',
  scope: 'settings:read',
  rest: 'GET /app/usage',
  output: Usage,
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    return usage(db(ctx), ctx.platform.clock, ctx.tenant.accountId)
  },
})

/** In the order the tool server lists them. */
export const accountTools = [getAccount, getAccountSettings, updateAccountSettingsTool, getUsage]
