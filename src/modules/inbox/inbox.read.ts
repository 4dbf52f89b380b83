import { notFound } from '../../platform/http/errors.ts'
import { type Page, toPage } from '../../platform/http/pagination.ts'
import { contactNames } from '../contacts/index.ts'
import { inboxPage, searchText, type View, viewCounts } from './inbox.lists.ts'
import { actorOf } from './inbox.live.ts'
import * as repo from './inbox.repository.ts'
import type { Channel, InboxServiceDeps, InboxTenant } from './inbox.types.ts'
import { conversationView, historyView, messageView, UUID } from './inbox.views.ts'

/** Reading: the conversations, a conversation's messages and the account-wide message list. */
export function inboxReading(deps: InboxServiceDeps) {
  const { db } = deps

  return {
    /**
     * The web app's inbox: a view's conversations (every one without a view) matching the search, by latest
     * activity with their contacts, and the account's unread total.
     */
    async inbox(tenant: InboxTenant, page: { limit: number; offset: number; view?: View; q?: string }) {
      const { limit, offset } = page
      const rows = await inboxPage(db, tenant.accountId, {
        limit,
        offset,
        view: page.view,
        q: searchText(page.q),
        memberId: actorOf(tenant),
      })
      const { items, has_more } = toPage(rows, limit, offset)
      const conversations = items.map(({ row, contact }) => {
        const found = (typeof contact === 'string' ? JSON.parse(contact) : contact) as {
          name: string
          phone: string
          email: string
        } | null
        const view = conversationView(row, found?.name ?? '')
        return { ...view, contact: { id: row.contactId, name: '', phone: '', email: '', ...found } }
      })
      return {
        conversations,
        has_more,
        unread_count: rows[0]?.unreadTotal ?? (await repo.unreadTotal(db, tenant.accountId)),
      }
    },

    /** How many conversations each view holds, for the member asking (mine: null for a key). */
    async inboxCounts(tenant: InboxTenant) {
      return { counts: await viewCounts(db, tenant.accountId, actorOf(tenant)) }
    },

    lastInboundAt: (accountId: string, contactId: string, channel: Channel) =>
      repo.lastInboundAt(db, accountId, contactId, channel),

    async listConversations(
      tenant: InboxTenant,
      query: {
        channel?: Channel
        needs_person?: boolean
        sort?: 'created_at' | 'last_message_at'
        limit: number
        offset: number
      },
    ): Promise<Page<ReturnType<typeof conversationView>>> {
      const rows = await repo.listConversations(db, tenant.accountId, { ...query, sort: query.sort ?? 'created_at' })
      const page = toPage(rows, query.limit, query.offset)
      const names = await contactNames(
        db,
        tenant.accountId,
        page.items.map((r) => r.contactId),
      )
      return { ...page, items: page.items.map((r) => conversationView(r, names.get(r.contactId) ?? '')) }
    },

    /** The newest `limit` messages after `offset` from the newest end, oldest first within the page. */
    async conversationMessages(tenant: InboxTenant, id: string, query: { limit: number; offset: number }) {
      const conversation = UUID.test(id) ? await repo.findConversation(db, tenant.accountId, id) : undefined
      if (!conversation) throw notFound('conversation')
      const page = toPage(await repo.conversationMessages(db, tenant.accountId, id, query), query.limit, query.offset)
      return { ...page, items: page.items.reverse().map(historyView) }
    },

    async listMessages(
      tenant: InboxTenant,
      query: {
        direction: 'inbound' | 'outbound'
        created_after?: string
        conversation_id?: string
        limit: number
        offset: number
      },
    ) {
      const rows = await repo.listMessages(db, tenant.accountId, {
        direction: query.direction,
        createdAfter: query.created_after ? new Date(query.created_after) : undefined,
        conversationId: query.conversation_id,
        limit: query.limit,
        offset: query.offset,
      })
      const page = toPage(rows, query.limit, query.offset)
      return { ...page, items: page.items.map(messageView) }
    },
  }
}
