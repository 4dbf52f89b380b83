import { eq } from 'drizzle-orm'
import type { Static } from 'typebox'
import { getAccount } from '../../platform/auth/accounts.service.ts'
import { plans } from '../../platform/auth/auth.tables.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { contactCount } from '../contacts/index.ts'
import { messagesUsedIn, monthIn } from '../messaging/index.ts'
import { countWebhookSubscriptions } from '../webhooks/index.ts'
import type { Usage } from './account.schemas.ts'

/** Messages this month, contacts and webhook subscriptions against the plan's limits. */
export async function usage(db: Db, clock: Clock, accountId: string): Promise<Static<typeof Usage>> {
  const account = await getAccount(db, accountId)
  const [plan] = await db.select().from(plans).where(eq(plans.name, account.plan))
  const month = monthIn(clock.now(), account.timezone)
  const quota = (used: number, limit: number) => ({ used, limit, left: Math.max(0, limit - used) })
  return {
    plan: account.plan,
    month,
    messages: quota(await messagesUsedIn(db, accountId, month), plan?.messagesPerMonth ?? 0),
    contacts: quota(await contactCount(db, accountId), plan?.contactsLimit ?? 0),
    webhook_subscriptions: quota(await countWebhookSubscriptions(db, accountId), plan?.webhooksLimit ?? 0),
    requests_per_minute: plan?.requestsPerMinute ?? 120,
  }
}
