import { randomBytes } from 'node:crypto'
import type { Static } from 'typebox'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import type { ChannelsService } from '../channels/index.ts'
import type { ContactsService } from '../contacts/index.ts'
import { trackLinks } from './messaging.links.ts'
import { monthIn, releaseUnit, reserveUnit } from './messaging.quota.ts'
import * as repo from './messaging.repository.ts'
import type { SendingSettingsBody } from './messaging.schemas.ts'
import type { TemplateSends } from './messaging.sends.ts'
import { sendingSettingsService } from './messaging.settings.ts'

export type MessagingTenant = Pick<TenantContext, 'accountId' | 'account'>

/** Which kind of send POST /messages made: free text sent at once (201), or a template send queued (202). */
export type SendResult =
  | { sent: NonNullable<Awaited<ReturnType<ChannelsService['sendText']>>['message']>; queued?: undefined }
  | { queued: Awaited<ReturnType<TemplateSends['queue']>>; sent?: undefined }

export interface MessagingServiceDeps {
  db: Db
  clock: Clock
  contacts: Pick<ContactsService, 'get'>
  channels: Pick<ChannelsService, 'requireChatConnected' | 'sendText' | 'sendMedia'>
  /** utm_source of tracked links (HEROLD_SERVICE_NAME) */
  serviceName: string
  /** HEROLD_PUBLIC_URL: the base of short links */
  publicUrl: string
  /** template sends (messaging.sends.ts) */
  sends: Pick<TemplateSends, 'queue' | 'get'>
}

export const MAX_TEXT_LENGTH = 4000
/** WhatsApp's longest media caption */
export const MAX_CAPTION_LENGTH = 1024

/** 72 random bits: short links cannot be guessed or enumerated. */
export const newLinkId = () => randomBytes(9).toString('base64url')

export interface SendInput {
  contact_id: string
  text?: string
  template?: { id: string; variables?: Record<string, string> }
  /**
   * a file sent with the text (a saved reply's media; not part of POST /messages): one media message, the text its
   * caption
   */
  media?: { url: string; mime: string; filename?: string | null }
}

const conflict = (code: string, message: string) => new AppError(409, code, message)

export function messagingService(deps: MessagingServiceDeps) {
  const { db, clock } = deps

  /** The recipient checks after the quota, in the spec's order; throws the first that fails. */
  async function checkRecipient(accountId: string, contact: { phone: string; optin_chat: string }) {
    await deps.channels.requireChatConnected(accountId)
    if (contact.phone === '') throw conflict('contact_no_phone', 'The contact has no phone number')
    if (contact.optin_chat === 'opted_out') throw conflict('contact_opted_out', 'The contact opted out of chat')
    if (contact.optin_chat !== 'confirmed') {
      throw conflict('contact_not_optin', "The contact's chat opt-in is not confirmed")
    }
  }

  const protection = sendingSettingsService({ db, clock })

  return {
    /** GET /settings/sending: the frequency cap and quiet hours. */
    sendingSettings: (tenant: MessagingTenant) => protection.get(tenant.accountId),

    /** PATCH /settings/sending: only the given fields change. */
    updateSendingSettings: (tenant: MessagingTenant, change: Static<typeof SendingSettingsBody>) =>
      protection.update(tenant.accountId, change),

    /**
     * POST /messages with free text: the checks in the spec's order, one unit of the monthly quota reserved,
     * then sent at once. The unit goes back when a check failed or the provider refused (nothing was sent); an
     * unexpected failure during the provider call keeps it, since the message may have gone out. `automated`: Herold's
     * own message (the inbox's away message), stored as such.
     */
    async send(tenant: MessagingTenant, input: SendInput, options: { automated?: boolean } = {}): Promise<SendResult> {
      if ((input.text === undefined) === (input.template === undefined)) {
        throw badRequest('Send exactly one of text or template')
      }
      if (input.template !== undefined) {
        return { queued: await deps.sends.queue(tenant, { contact_id: input.contact_id, template: input.template }) }
      }
      if (input.text === undefined) throw badRequest('Send exactly one of text or template')
      const contact = await deps.contacts.get(tenant, input.contact_id)
      if (input.media && input.text.length > MAX_CAPTION_LENGTH) {
        throw badRequest(
          `A text sent with a file is its caption: at most ${MAX_CAPTION_LENGTH} characters`,
          'caption_too_long',
          { field: 'text', max_length: MAX_CAPTION_LENGTH },
        )
      }
      if (tenant.account.sendingPaused) {
        throw new AppError(403, 'subscription_locked', 'Sending is paused for this account')
      }
      const month = monthIn(clock.now(), tenant.account.timezone)
      if (!(await reserveUnit(db, tenant.accountId, month))) {
        throw new AppError(403, 'limit_reached', 'The monthly message quota is used up', { key: 'message_quota' })
      }
      let outcome: Awaited<ReturnType<ChannelsService['sendText']>>
      let handedToProvider = false
      try {
        await checkRecipient(tenant.accountId, contact)
        const tracked = trackLinks(input.text, {
          serviceName: deps.serviceName,
          medium: 'chat',
          publicUrl: deps.publicUrl,
          maxLength: input.media ? MAX_CAPTION_LENGTH : MAX_TEXT_LENGTH,
          newId: newLinkId,
        })
        // stored before the send: a short link works from the moment the customer can see it
        await repo.insertLinks(db, tenant.accountId, contact.id, tracked.links, clock.now())
        handedToProvider = true
        outcome = input.media
          ? await deps.channels.sendMedia(tenant.accountId, {
              contactId: contact.id,
              to: contact.phone,
              text: tracked.text,
              media: input.media,
            })
          : await deps.channels.sendText(
              tenant.accountId,
              { contactId: contact.id, to: contact.phone, text: tracked.text },
              options.automated ? { automated: true } : {},
            )
      } catch (error) {
        // AppErrors of sendText come from its own checks, before the provider is called
        if (!handedToProvider || error instanceof AppError) await releaseUnit(db, tenant.accountId, month)
        throw error
      }
      if (!outcome.ok) {
        await releaseUnit(db, tenant.accountId, month)
        throw new AppError(502, 'send_failed', `The provider refused the message: ${outcome.error.message}`, {
          key: outcome.error.kind,
          details: { provider_code: outcome.error.providerCode, message_id: outcome.message?.id ?? null },
        })
      }
      if (!outcome.message) throw new Error('the sent message was not stored')
      return { sent: outcome.message }
    },

    /** GET /sends/{id}: a template send of this account, else 404. */
    sendRecord: (tenant: MessagingTenant, id: string) => deps.sends.get(tenant, id),

    /** GET /public/t/c/{id}: the full address, with the click counted for the link's contact. */
    async followLink(id: string): Promise<string> {
      const link = await repo.linkById(db, id)
      if (!link) throw notFound('link')
      await repo.insertClick(db, {
        accountId: link.accountId,
        linkId: link.id,
        contactId: link.contactId,
        clickedAt: clock.now(),
      })
      return link.url
    },
  }
}

export type MessagingService = ReturnType<typeof messagingService>
