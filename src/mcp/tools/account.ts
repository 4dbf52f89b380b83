import { Type } from 'typebox'
import {
  AccountSettingsBody,
  accountSettings,
  updateAccountSettings,
  usage,
} from '../../modules/account/account.service.ts'
import { out } from '../outputs.ts'
import { defineTool, restRule, type ToolContext } from '../tool.ts'

/** The account's own settings, its usage against the plan, and the chat number's state. */

const db = (ctx: ToolContext) => ctx.platform.database.orm

export const getAccountSettings = defineTool({
  name: 'get_account_settings',
  title: 'Account settings',
  description:
    'The account’s name, plan, default language (of new contacts and templates), timezone (of the monthly quota and follow-up times) and whether sending is paused.',
  scope: 'settings:read',
  rest: 'GET /app/account',
  output: out.get_account_settings,
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
  output: out.update_account_settings,
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
  output: out.get_usage,
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    return usage(db(ctx), ctx.platform.clock, ctx.tenant.accountId)
  },
})

export const getChatChannelStatus = defineTool({
  name: 'get_chat_channel_status',
  title: 'Chat number status and daily limit',
  description:
    'The WhatsApp number: connected or not, provider and number, whether sending is possible, messages per second (coexistence), and the daily limit tier with the different customers reached in the last 24 hours, how many are left and when the window has room again.',
  scope: 'settings:read',
  rest: 'GET /app/channels/chat',
  output: out.get_chat_channel_status,
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    return { ...(await ctx.services.channels.chatStatus(ctx.tenant.accountId, ctx.tenant.account)) }
  },
})

export const accountTools = [getAccountSettings, updateAccountSettingsTool, getUsage, getChatChannelStatus]
