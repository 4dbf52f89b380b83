import { Type } from 'typebox'
import { StatisticsQuery } from '../http/statistics.ts'

export const Uuid = (description: string) => Type.String({ format: 'uuid', description })
export const ContactId = Uuid('the contact id (uuid), from search_contacts or create_contact')

/** limit and offset as REST pages them. */
export function paging(maxLimit: number, defaultLimit: number) {
  return {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: maxLimit, default: defaultLimit })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 100000, default: 0 })),
  }
}

/** A well-formed uuid: an id that is not one is answered as not found before the database is asked. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** The days a statistics tool covers, as the REST statistics operations take them. */
export const StatisticsRange = Type.Optional(StatisticsQuery.properties.range)

/** The spec's idempotency_key (printable ASCII): the same key replays the first result, as Idempotency-Key does. */
export const idempotencyKey = (description: string) => ({
  idempotency_key: Type.Optional(
    Type.String({ minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$', description }),
  ),
})
