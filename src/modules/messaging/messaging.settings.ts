import { eq } from 'drizzle-orm'
import type { Static } from 'typebox'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { badRequest } from '../../platform/http/errors.ts'
import { DEFAULT_PROTECTION, type Protection } from './messaging.protection.ts'
import type { SendingSettings, SendingSettingsBody } from './messaging.schemas.ts'
import { sendingSettings } from './messaging.tables.ts'

/** The account's frequency cap and quiet hours (sending_settings; without a row, a new account's defaults). */

async function protectionOf(db: Db, accountId: string): Promise<Protection> {
  const [row] = await db.select().from(sendingSettings).where(eq(sendingSettings.accountId, accountId))
  return row ?? DEFAULT_PROTECTION
}

export function sendingSettingsView(p: Protection): Static<typeof SendingSettings> {
  return {
    frequency_cap: { enabled: p.capEnabled, max_messages: p.capMessages, window_hours: p.capWindowHours },
    quiet_hours: { enabled: p.quietEnabled, from: p.quietFrom, to: p.quietTo },
  }
}

export function sendingSettingsService({ db, clock }: { db: Db; clock: Clock }) {
  return {
    async get(accountId: string) {
      return sendingSettingsView(await protectionOf(db, accountId))
    },

    /** Only the given fields change, over the current settings (or a new account's defaults), in one upsert. */
    async update(accountId: string, change: Static<typeof SendingSettingsBody>) {
      const { frequency_cap: cap, quiet_hours: quiet } = change
      const set: Partial<Protection> = {
        ...(cap?.enabled === undefined ? {} : { capEnabled: cap.enabled }),
        ...(cap?.max_messages === undefined ? {} : { capMessages: cap.max_messages }),
        ...(cap?.window_hours === undefined ? {} : { capWindowHours: cap.window_hours }),
        ...(quiet?.enabled === undefined ? {} : { quietEnabled: quiet.enabled }),
        ...(quiet?.from === undefined ? {} : { quietFrom: quiet.from }),
        ...(quiet?.to === undefined ? {} : { quietTo: quiet.to }),
      }
      const next = { ...(await protectionOf(db, accountId)), ...set }
      if (next.quietFrom === next.quietTo) {
        throw badRequest('quiet_hours: from and to must differ', 'quiet_hours_invalid', { field: 'quiet_hours' })
      }
      const updatedAt = clock.now()
      const [row] = await db
        .insert(sendingSettings)
        .values({ accountId, ...next, updatedAt })
        .onConflictDoUpdate({ target: sendingSettings.accountId, set: { ...set, updatedAt } })
        .returning()
      return sendingSettingsView(row)
    },
  }
}

export type SendingSettingsService = ReturnType<typeof sendingSettingsService>
