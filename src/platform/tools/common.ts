import { Type } from 'typebox'

export const Uuid = (description: string) => Type.String({ format: 'uuid', description })
export const ContactId = Uuid('the contact id (uuid), from search_contacts or create_contact')

/** limit and offset as REST pages them. */
export function paging(maxLimit: number, defaultLimit: number) {
  return {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: maxLimit, default: defaultLimit })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 100000, default: 0 })),
  }
}
