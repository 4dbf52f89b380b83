import { Type } from 'typebox'

/** The period of a per-item statistics route: the last 7, 30 or 90 days up to now, or everything. */
export const STATISTICS_RANGES = { '7d': 7, '30d': 30, '90d': 90, all: null } as const
export type StatisticsRange = keyof typeof STATISTICS_RANGES

export const StatisticsQuery = Type.Object(
  {
    range: Type.Union([Type.Literal('7d'), Type.Literal('30d'), Type.Literal('90d'), Type.Literal('all')], {
      default: '30d',
      description: 'the last 7, 30 or 90 days (24-hour periods up to now), or all',
    }),
  },
  { additionalProperties: false },
)

/** When the range begins (null: all). */
export function rangeStart(now: Date, range: StatisticsRange): Date | null {
  const days = STATISTICS_RANGES[range]
  return days === null ? null : new Date(now.getTime() - days * 24 * 3600_000)
}

const Count = Type.Integer({ minimum: 0 })

/** Sends by the furthest status they reached: a read send counts under sent, delivered and read. */
export const SendFunnel = Type.Object(
  {
    total: Count,
    queued: Type.Integer({ minimum: 0, description: 'waiting or being sent' }),
    sent: Type.Integer({ minimum: 0, description: 'reached the provider (sent, delivered or read)' }),
    delivered: Type.Integer({ minimum: 0, description: 'delivered or read' }),
    read: Count,
    failed: Count,
    skipped: Count,
    delivery_rate: Type.Union([Type.Number(), Type.Null()], { description: 'delivered / sent; null without sends' }),
    read_rate: Type.Union([Type.Number(), Type.Null()], { description: 'read / delivered; null without deliveries' }),
  },
  { description: 'sends by the furthest status they reached' },
)

/** The funnel from counts per send status. */
export function sendFunnel(byStatus: Record<string, number>) {
  const n = (s: string) => byStatus[s] ?? 0
  const read = n('read')
  const delivered = n('delivered') + read
  const sent = n('sent') + delivered
  const rate = (a: number, b: number) => (b === 0 ? null : Math.round((a / b) * 10_000) / 10_000)
  return {
    total: Object.values(byStatus).reduce((a, b) => a + b, 0),
    queued: n('queued') + n('sending'),
    sent,
    delivered,
    read,
    failed: n('failed'),
    skipped: n('skipped'),
    delivery_rate: rate(delivered, sent),
    read_rate: rate(read, delivered),
  }
}

const dateOrNull = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string))

/** A template_sends row read by raw SQL (snake_case columns) as the send-record lists answer it. */
export function sendRecordView(r: Record<string, unknown>) {
  return {
    send_id: String(r.id),
    contact_id: String(r.contact_id),
    status: String(r.status),
    reason: (r.reason as string | null) ?? null,
    reason_detail: (r.reason_detail as string | null) ?? null,
    created_at: dateOrNull(r.created_at) as Date,
    sent_at: dateOrNull(r.sent_at),
    delivered_at: dateOrNull(r.delivered_at),
    read_at: dateOrNull(r.read_at),
    failed_at: dateOrNull(r.failed_at),
    skipped_at: dateOrNull(r.skipped_at),
  }
}
