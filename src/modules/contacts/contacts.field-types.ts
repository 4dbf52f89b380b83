// The custom fields' types and values, apart from the tables: the import's reading thread loads the rules of the
// fields without the database's schema (see contacts.import-thread.ts).

export const CUSTOM_FIELD_TYPES = ['text', 'number', 'date', 'boolean', 'choice'] as const
export type CustomFieldType = (typeof CUSTOM_FIELD_TYPES)[number]
/** text and choice: a string; number: a number; date: 'YYYY-MM-DD'; boolean: true or false */
export type CustomFieldValue = string | number | boolean
