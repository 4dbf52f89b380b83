import { sql } from 'drizzle-orm'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { notFound } from '../../platform/http/errors.ts'
import { toPage } from '../../platform/http/pagination.ts'
import { rangeStart, type StatisticsRange, sendFunnel, sendRecordView } from '../../platform/http/statistics.ts'
import type { TemplatesTenant } from './templates.ports.ts'
import * as repo from './templates.repository.ts'

/** What a template's sends came to: the records, newest first, and the funnel by status and origin. */
export function templateSendsListing(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps
  return {
    /** GET /templates/{id}/sends: its send records newest first, by status or origin. */
    async sends(
      tenant: TemplatesTenant,
      id: string,
      query: { status?: string; origin?: string; limit: number; offset: number },
    ) {
      const row = await repo.findTemplate(db, tenant.accountId, id)
      if (!row) throw notFound('template')
      const result = await db.execute(sql`SELECT id, contact_id, status, reason, reason_detail, origin, origin_id,
          created_at, sent_at, delivered_at, read_at, failed_at, skipped_at FROM template_sends
        WHERE account_id = ${tenant.accountId} AND template_id = ${row.id}
          ${query.status ? sql`AND status = ${query.status}` : sql``}
          ${query.origin ? sql`AND origin = ${query.origin}` : sql``}
        ORDER BY created_at DESC, id DESC LIMIT ${query.limit + 1} OFFSET ${query.offset}`)
      const list = (result as unknown as { rows: Array<Record<string, unknown>> }).rows
      const page = toPage(list, query.limit, query.offset)
      const items = page.items.map((r) => ({
        ...sendRecordView(r),
        origin: String(r.origin),
        origin_id: (r.origin_id as string | null) ?? null,
      }))
      return { ...page, items }
    },

    /** GET /templates/{id}/statistics: its sends in the range by the furthest status reached, and by origin. */
    async statistics(tenant: TemplatesTenant, id: string, range: StatisticsRange) {
      const row = await repo.findTemplate(db, tenant.accountId, id)
      if (!row) throw notFound('template')
      const since = rangeStart(clock.now(), range)
      const result = await db.execute(sql`SELECT origin, status, count(*)::int AS n FROM template_sends
        WHERE account_id = ${tenant.accountId} AND template_id = ${row.id}
          ${since ? sql`AND created_at >= ${since.toISOString()}::timestamptz` : sql``}
        GROUP BY origin, status`)
      const list = (result as unknown as { rows: Array<{ origin: string; status: string; n: number }> }).rows
      const byStatus: Record<string, number> = {}
      const byOrigin: Record<string, number> = { api: 0, newsletter: 0, followup: 0, automation: 0 }
      for (const r of list) {
        byStatus[r.status] = (byStatus[r.status] ?? 0) + Number(r.n)
        byOrigin[r.origin] = (byOrigin[r.origin] ?? 0) + Number(r.n)
      }
      return {
        template_id: row.id,
        name: row.name,
        range,
        since,
        sends: sendFunnel(byStatus),
        by_origin: byOrigin,
      }
    },
  }
}
