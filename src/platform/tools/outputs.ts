import { type TObject, type TProperties, Type } from 'typebox'

/** The pieces tools' output schemas are made of where no REST response schema says the same. */
export const obj = (properties: TProperties, description?: string) =>
  Type.Object(properties, description ? { description } : {})
export const ok = { ok: Type.Boolean() }
export const withOk = (schema: TObject) => obj({ ...ok, ...schema.properties })
