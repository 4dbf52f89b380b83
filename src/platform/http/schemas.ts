import { type Static, type TObject, type TUnion, Type } from 'typebox'

/**
 * A union of objects told apart by their `type` property, validated as an OpenAPI discriminated `oneOf`: Ajv checks
 * only the variant named by `type`. (A plain anyOf would let `removeAdditional` strip the properties of the right
 * variant while trying the wrong ones first.)
 */
export function discriminated<V extends TObject[]>(
  variants: [...V],
  options: { description?: string; title?: string } = {},
) {
  return Type.Unsafe<Static<TUnion<V>>>({
    type: 'object',
    required: ['type'],
    discriminator: { propertyName: 'type' },
    oneOf: variants,
    ...options,
  })
}
