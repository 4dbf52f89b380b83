import { Type } from 'typebox'

export const RANGES = { '7d': 7, '30d': 30, '90d': 90 } as const
export type Range = keyof typeof RANGES

export const StatsQuery = Type.Object(
  {
    range: Type.Union([Type.Literal('7d'), Type.Literal('30d'), Type.Literal('90d')], {
      default: '30d',
      description: 'the last 7, 30 or 90 days, today included, in the account timezone',
    }),
  },
  { additionalProperties: false },
)

const Count = Type.Integer({ minimum: 0 })
const OPTIN_STATES = ['none', 'pending', 'confirmed', 'opted_out'] as const
export const SEND_STATES = ['queued', 'sent', 'delivered', 'read', 'failed', 'skipped'] as const
const PerState = Type.Object(Object.fromEntries(OPTIN_STATES.map((s) => [s, Count])) as Record<string, typeof Count>)
const PerSendStatus = Type.Object(
  Object.fromEntries(SEND_STATES.map((s) => [s, Count])) as Record<string, typeof Count>,
  { description: 'sends that reached each status (a send that was delivered counts under sent and delivered)' },
)
const PerChannel = Type.Object({ chat: Count, email: Count })

const seriesFields = {
  contacts_new: Count,
  optins_confirmed: PerChannel,
  opt_outs: PerChannel,
  messages_in: Count,
  messages_out: Count,
  template_sends: PerSendStatus,
  newsletter_sends: PerSendStatus,
  link_clicks: Count,
  automation_runs: Count,
  followup_runs: Count,
  ai_replies: Count,
}

export const Day = Type.Object({ date: Type.String({ format: 'date' }), ...seriesFields })

export const StatsResponse = Type.Object({
  stats: Type.Object({
    range: Type.String(),
    timezone: Type.String({ description: 'the account timezone; every day is a calendar day there' }),
    from: Type.String({ format: 'date' }),
    to: Type.String({ format: 'date', description: 'today in the account timezone' }),
    contacts: Type.Object({
      total: Count,
      new_in_range: Count,
      optin_chat: PerState,
      optin_email: PerState,
    }),
    totals: Type.Object(seriesFields, { description: 'each series summed over the range' }),
    days: Type.Array(Day, { description: 'one entry per day, oldest first, days without activity as zeros' }),
  }),
})
