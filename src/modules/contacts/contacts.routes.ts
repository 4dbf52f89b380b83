import type { FastifyInstance } from 'fastify'
import type { Static } from 'typebox'
import { errorResponses } from '../../platform/http/errors.ts'
import { withGermanAliases } from '../../platform/http/serializer.ts'
import type { ContactTag as Tag } from './contacts.rules.ts'
import {
  AddTagsBody,
  AddTagsResponse,
  Contact,
  ContactId,
  ContactResponse,
  ContactTag,
  CreateBody,
  CreatedResponse,
  CreateQuery,
  DeleteQuery,
  DeleteResponse,
  ListQuery,
  ListResponse,
  RemoveTagResponse,
  TagCount,
  TagCountsResponse,
  TagParams,
  UpdateBody,
  UpdatedResponse,
} from './contacts.schemas.ts'
import type { ContactsService } from './contacts.service.ts'

const tags = ['contacts']
const tagView = (tag: Tag) => withGermanAliases({ ...tag }, ['origin'])

export function contactsRoutes(service: ContactsService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.addSchema(Contact)
    app.addSchema(ContactTag)
    app.addSchema(TagCount)

    app.get(
      '/contacts',
      {
        config: { scope: 'contacts:read' },
        schema: {
          operationId: 'listContacts',
          summary: 'List contacts, newest first, optionally searched and filtered by custom field',
          description:
            '`q` searches name, email and phone; `fields` filters by custom field: a JSON array of conditions ' +
            '(`?fields=[{"field":"level","op":"equals","value":"gold"}]`, URL-encoded), all of which must hold. ' +
            'A condition naming a field the account does not have, or whose op or value does not fit its type, is a ' +
            '400 with key field_condition_invalid, `field` and `rule`.',
          tags,
          querystring: ListQuery,
          response: {
            ...errorResponses({
              400: 'bad_request: fields is not a JSON array of conditions; field_condition_invalid (with field, rule, problems): a condition does not fit the account’s custom fields',
            }),
            200: ListResponse,
          },
        },
      },
      async (request, reply) => {
        const query = request.query as Static<typeof ListQuery>
        // without a search the database writes the page as JSON, passed on as it is
        const json = await service.listJson(request.tenant, query)
        if (json !== null) return reply.type('application/json; charset=utf-8').send(json)
        const page = await service.list(request.tenant, query)
        const { items, ...rest } = page
        return { contacts: items, ...rest }
      },
    )

    app.post(
      '/contacts',
      {
        config: { scope: 'contacts:write', idempotent: true },
        schema: {
          operationId: 'createContact',
          summary: 'Create a contact, or update the one with this email or phone (upsert)',
          description:
            'At least email or phone. Without upsert a duplicate gives 409 contact_exists (key kontakt_email_doppelt, ' +
            'kontakt_nummer_doppelt or kontakt_doppelt, with contact_id); email and phone of two different contacts ' +
            'give 409 contact_conflict with contact_ids. 403 limit_reached at the plan contact limit. ' +
            'Opt-ins start at none and are never raised here; a changed email or phone resets its opt-in to none.',
          tags,
          querystring: CreateQuery,
          body: CreateBody,
          response: {
            ...errorResponses({
              400: 'bad_request: phone is not a valid international number (with field); email_or_phone_required: neither email nor phone',
              403: "limit_reached: the plan's contact limit is reached",
              409: 'contact_exists (key kontakt_email_doppelt, kontakt_nummer_doppelt or kontakt_doppelt, with contact_id): without upsert, a contact has this email or phone; contact_conflict (with contact_ids): email and phone belong to two different contacts',
            }),
            200: CreatedResponse,
            201: CreatedResponse,
          },
        },
      },
      async (request, reply) => {
        const body = request.body as Static<typeof CreateBody>
        const query = request.query as Static<typeof CreateQuery>
        const result = await service.create(request.tenant, body, {
          upsert: body.upsert === true || query.upsert === true,
        })
        if (result.created) return reply.code(201).send({ ok: true, created: true, contact: result.contact })
        return { ok: true, created: false, updated: result.updated, contact: result.contact }
      },
    )

    app.get(
      '/contacts/tags',
      {
        config: { scope: 'contacts:read' },
        schema: {
          operationId: 'listContactTagCounts',
          summary: 'Tag counts over the newest 1000 contacts',
          tags,
          response: { 200: TagCountsResponse },
        },
      },
      async (request) => {
        const result = await service.tagCounts(request.tenant)
        return withGermanAliases(
          { ...result, tags: result.tags.map((t) => withGermanAliases({ ...t }, ['origin', 'count'])) },
          ['checked', 'capped'],
        )
      },
    )

    app.get(
      '/contacts/:id',
      {
        config: { scope: 'contacts:read' },
        schema: {
          operationId: 'getContact',
          summary: 'One contact',
          tags,
          params: ContactId,
          response: { 200: ContactResponse },
        },
      },
      async (request, reply) => {
        const { id } = request.params as Static<typeof ContactId>
        return reply.type('application/json; charset=utf-8').send(await service.getJson(request.tenant, id))
      },
    )

    app.patch(
      '/contacts/:id',
      {
        config: { scope: 'contacts:write' },
        schema: {
          operationId: 'updateContact',
          summary: 'Change a contact; only given fields change',
          description:
            'email and phone may be null, but the contact must keep one of them. A duplicate gives 409 contact_exists. ' +
            'A changed email resets optin_email, a changed phone resets optin_chat, to none.',
          tags,
          params: ContactId,
          body: UpdateBody,
          response: {
            ...errorResponses({
              400: 'bad_request: phone is not a valid international number (with field); email_or_phone_required: the contact would keep neither email nor phone',
              409: 'contact_exists (key kontakt_email_doppelt, kontakt_nummer_doppelt or kontakt_doppelt, with contact_id): another contact has this email or phone',
            }),
            200: UpdatedResponse,
          },
        },
      },
      async (request) => {
        const { id } = request.params as Static<typeof ContactId>
        const contact = await service.update(request.tenant, id, request.body as Static<typeof UpdateBody>)
        return { ok: true, contact }
      },
    )

    app.delete(
      '/contacts/:id',
      {
        config: { scope: 'contacts:delete' },
        schema: {
          operationId: 'deleteContact',
          summary: 'Delete a contact and everything personal about it',
          description:
            'Removes pending send jobs, conversations and messages, personal automation runs, tags, then the contact, ' +
            'in one transaction. Events and consent records stay, anonymized. contacts:write is not enough.',
          tags,
          params: ContactId,
          querystring: DeleteQuery,
          response: { 200: DeleteResponse },
        },
      },
      async (request) => {
        const { id } = request.params as Static<typeof ContactId>
        const query = request.query as Static<typeof DeleteQuery>
        const result = await service.delete(request.tenant, id, {
          requestedByContact: query.requested_by_contact === true,
        })
        return withGermanAliases(
          {
            ok: true,
            removed: result.removed,
            anonymized: result.anonymized,
            confirmation_sent: result.confirmationSent,
          },
          ['confirmation_sent'],
        )
      },
    )

    app.post(
      '/contacts/:id/tags',
      {
        config: { scope: 'contacts:write' },
        schema: {
          operationId: 'addContactTags',
          summary: 'Add tags (origin manuell)',
          description:
            'At most 30 tags per contact; an existing tag changes nothing (it is neither added nor rejected). ' +
            'System tags (kauf, gekauft, kunde, marketing, newsletter, anything starting herkunft:) give 400.',
          tags,
          params: ContactId,
          body: AddTagsBody,
          response: {
            ...errorResponses({
              400: 'tag_required: no tag given; system_tag: a system tag cannot be added through the API',
            }),
            200: AddTagsResponse,
          },
        },
      },
      async (request) => {
        const { id } = request.params as Static<typeof ContactId>
        const body = request.body as Static<typeof AddTagsBody>
        const names = [...(body.tag === undefined ? [] : [body.tag]), ...(body.tags ?? [])]
        const result = await service.addTags(request.tenant, id, names)
        return withGermanAliases({ ok: true, ...result, tags: result.tags.map(tagView) }, ['added', 'rejected'])
      },
    )

    app.delete(
      '/contacts/:id/tags/:tag',
      {
        config: { scope: 'contacts:write' },
        schema: {
          operationId: 'removeContactTag',
          summary: 'Remove a tag (URL-encoded name)',
          description:
            'System tags give 400. Removing a tag the contact does not carry answers 200 with removed false.',
          tags,
          params: TagParams,
          response: {
            ...errorResponses({ 400: 'system_tag: a system tag cannot be removed through the API' }),
            200: RemoveTagResponse,
          },
        },
      },
      async (request) => {
        const { id, tag } = request.params as Static<typeof TagParams>
        const result = await service.removeTag(request.tenant, id, tag)
        return { ok: true, removed: result.removed, tags: result.tags.map(tagView) }
      },
    )
  }
}
