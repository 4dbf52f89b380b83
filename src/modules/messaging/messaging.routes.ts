import type { FastifyInstance } from 'fastify'
import type { Static } from 'typebox'
import { Message } from '../inbox/inbox.schemas.ts'
import { SendBody, sendErrors } from './messaging.schemas.ts'
import type { MessagingService } from './messaging.service.ts'

const tags = ['messages']

export function messagingRoutes(service: MessagingService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.post<{ Body: Static<typeof SendBody> }>(
      '/messages',
      {
        config: { scope: 'messages:write', idempotent: true },
        schema: {
          summary: 'Send a free-text message to a contact',
          description:
            'Exactly one of text or template. Checked in this order: contact (404), account blocked, sending paused (403 subscription_locked), monthly quota (403 limit_reached), chat number connected (409 chat_not_connected), contact phone (409 contact_no_phone), opt-out (409 contact_opted_out), chat opt-in confirmed (409 contact_not_optin). Free text is sent at once: 201 with the stored message; a provider refusal (such as outside the 24-hour service window) gives 502 send_failed and stores the message as failed. Each sent message counts against the monthly quota (calendar month in the account timezone).',
          tags,
          body: SendBody,
          response: { 201: Message, ...sendErrors },
        },
      },
      async (request, reply) => {
        const message = await service.send(request.tenant, request.body)
        return reply.code(201).send(message)
      },
    )
  }
}

/** The short links of tracked texts: redirect at once, count the click. */
export function linkRoutes(service: MessagingService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get<{ Params: { id: string } }>(
      '/public/t/c/:id',
      { config: { public: true }, schema: { hide: true } },
      async (request, reply) => {
        const url = await service.followLink(request.params.id)
        return reply.header('cache-control', 'no-store').redirect(url, 302)
      },
    )
  }
}
