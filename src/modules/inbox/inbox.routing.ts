import { sql } from 'drizzle-orm'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { rowAsJsonSql, rowFromJson } from '../../platform/db/rows.ts'
import { AppError, badRequest } from '../../platform/http/errors.ts'
import {
  assignmentHistory,
  assignOnInbound,
  handOutQueue,
  listAvailability,
  setAvailability,
} from './inbox.assignment.ts'
import { awayHistory, awayOnInbound } from './inbox.away.ts'
import { getConversation } from './inbox.manage.ts'
import { inboxSettings } from './inbox.routing.tables.ts'
import { type AssignmentChange, type HoursChange, routingSettings, settingsView } from './inbox.settings.ts'
import type { InboundListener, InboxServiceDeps } from './inbox.types.ts'

/**
 * The inbox's own reaction to an inbound message, in the transaction that stores it: automatic assignment, then the
 * away message. The account's settings row comes with the inbox's first statement (preload), so an account that
 * uses neither pays no statement for them.
 */
export const routingOnInbound: InboundListener = {
  preload: (accountId) => rowAsJsonSql(inboxSettings, sql`${inboxSettings.accountId} = ${accountId}`),
  async run(tx, clock, message, preloaded) {
    const settings = rowFromJson(inboxSettings, preloaded?.value) ?? undefined
    if (!settings) return
    if (settings.assignmentMode === 'round_robin') {
      await assignOnInbound(tx, clock, message.accountId, message.conversationId)
    }
    await awayOnInbound(tx, clock, message, settings)
  },
}

type RoutingTenant = Pick<TenantContext, 'accountId' | 'account'> & { actor?: Partial<TenantContext['actor']> }

/** Which member an availability call is about: the caller by default; another member needs settings:write. */
function memberOf(tenant: RoutingTenant, memberId: string | undefined) {
  const self = tenant.actor?.userId
  if (memberId === undefined || memberId === self) {
    if (!self) throw badRequest('member_id: name the member (the call is not a member’s own)', 'member_id_required')
    return self
  }
  if (!tenant.actor?.scopes?.includes('settings:write')) {
    throw new AppError(403, 'forbidden', 'Setting another member’s availability needs settings:write', {
      key: 'apikey_scope_fehlt',
    })
  }
  return memberId
}

/** Routing: the settings (assignment, opening hours, away message), members' availability, the queue's hand-out. */
export function inboxRouting({ db, clock }: Pick<InboxServiceDeps, 'db' | 'clock'>) {
  const settings = routingSettings({ db, clock })
  const view = async (tenant: RoutingTenant) =>
    settingsView(await settings.get(tenant.accountId, tenant.account.timezone), clock.now())
  return {
    routingSettings: view,

    async updateAssignmentSettings(tenant: RoutingTenant, change: AssignmentChange) {
      const row = await settings.updateAssignment(tenant.accountId, tenant.account.timezone, change)
      // switched on or more room: conversations waiting may go now
      await db.transaction((tx) => handOutQueue(tx, clock, tenant.accountId, tenant.actor?.userId ?? null))
      return settingsView(row, clock.now())
    },

    async updateOpeningHours(tenant: RoutingTenant, change: HoursChange) {
      return settingsView(await settings.updateHours(tenant.accountId, tenant.account.timezone, change), clock.now())
    },

    /** Whether the business is open now, for the inbox's banner (every member may read it). */
    async openingState(tenant: RoutingTenant) {
      const current = await view(tenant)
      return {
        hours_enabled: current.hours.enabled,
        open_now: current.open_now,
        opens_at: current.opens_at,
        timezone: current.hours.timezone,
        away_enabled: current.away.enabled,
      }
    },

    async availability(tenant: RoutingTenant) {
      const members = await listAvailability(db, tenant.accountId)
      const self = tenant.actor?.userId
      return { members, me: members.find((m) => m.member_id === self) ?? null }
    },

    setAvailability: (tenant: RoutingTenant, available: boolean, memberId?: string) =>
      setAvailability(db, clock, {
        accountId: tenant.accountId,
        memberId: memberOf(tenant, memberId),
        available,
        actorId: tenant.actor?.userId ?? null,
      }),

    async routingHistory(tenant: RoutingTenant, conversationId: string) {
      await getConversation(db, tenant.accountId, conversationId)
      return {
        assignments: await assignmentHistory(db, tenant.accountId, conversationId),
        away_messages: await awayHistory(db, tenant.accountId, conversationId),
      }
    },
  }
}

/** For the modules and paths that free a member's room (close, snooze, reassign, member removal). */
export const handOutWaitingConversations = (tx: Db, clock: Clock, accountId: string, actorId: string | null) =>
  handOutQueue(tx, clock, accountId, actorId)
