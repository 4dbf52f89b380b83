import { type TSchema, Type } from 'typebox'
import { pageSchema, paginationQuery } from '../../platform/http/pagination.ts'
import { AI_REPLY_STATES, DOCUMENT_FORMATS, DOCUMENT_SOURCES, SEARCH_CONFIGS } from './knowledge.tables.ts'

const Nullable = <T extends TSchema>(schema: T, description?: string) =>
  Type.Union([schema, Type.Null()], description ? { description } : {})
const literals = <T extends readonly string[]>(values: T) => Type.Union(values.map((v) => Type.Literal(v)))
const at = Type.String({ format: 'date-time' })

export const JsonUploadBody = Type.Object(
  {
    url: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2000,
        description:
          'A public https address; the service downloads the file (at most 20 MB, no redirects, private and loopback addresses refused). Not together with data_base64.',
      }),
    ),
    data_base64: Type.Optional(
      Type.String({ minLength: 1, description: 'The file as base64 (at most 20 MB decoded).' }),
    ),
    filename: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description: 'Required with data_base64, with its extension (.pdf, .docx, .txt, .md, .html).',
      }),
    ),
    mime: Type.Optional(Type.String({ maxLength: 200, description: 'The claimed type, e.g. application/pdf.' })),
  },
  { description: 'One of `url` or `data_base64` (with `filename`).' },
)

/** Documentation only: the handler reads the multipart stream itself (the route's preValidation leaves {} here). */
export const MultipartUploadBody = Type.Unsafe({
  type: 'object',
  description: 'Multipart form with the document in the field `file` (required; at most 20 MB).',
  properties: { file: { type: 'string', format: 'binary' } },
})

export const Document = Type.Object({
  id: Type.String({ format: 'uuid' }),
  title: Type.String({ description: "the document's own title (HTML <title>, first heading), else the file name" }),
  filename: Type.String(),
  format: literals(DOCUMENT_FORMATS),
  mime: Type.String({ description: 'the type detected from the content' }),
  size: Type.Integer({ description: 'bytes' }),
  source: literals(DOCUMENT_SOURCES),
  source_url: Nullable(Type.String(), 'the downloaded address (url form)'),
  search_language: literals(SEARCH_CONFIGS),
  passages: Type.Integer({ description: 'how many passages the text was split into' }),
  characters: Type.Integer({ description: 'characters of extracted text' }),
  sha256: Type.String(),
  created_at: at,
})

export const DocumentResponse = Type.Object({ document: Document })
export const DocumentPage = pageSchema('documents', Document)
export const DocumentParams = Type.Object({ id: Type.String({ description: 'document id (uuid)' }) })
export const ListQuery = Type.Object(paginationQuery({ maxLimit: 100, defaultLimit: 25, maxOffset: 100_000 }))
export const Deleted = Type.Object({
  id: Type.String({ format: 'uuid' }),
  deleted: Type.Literal(true),
  passages: Type.Integer({ description: 'passages removed from the index' }),
})

export const SearchQuery = Type.Object({
  q: Type.String({ minLength: 1, maxLength: 500, description: 'words to find; "quoted phrases", OR and -word work' }),
  limit: Type.Integer({ minimum: 1, maximum: 50, default: 10 }),
})

export const Hit = Type.Object({
  document: Type.Object({
    id: Type.String({ format: 'uuid' }),
    title: Type.String(),
    filename: Type.String(),
    format: Type.String(),
  }),
  position: Type.Integer({ description: "the passage's place in its document, from 1" }),
  page: Nullable(Type.Integer(), 'the PDF page it starts on'),
  heading: Type.String({ description: 'the section heading the passage stands under' }),
  text: Type.String(),
  snippet: Type.String({ description: 'the best fragments, matches in **bold**' }),
  rank: Type.Number({ description: 'relevance; higher is better (headings weigh most)' }),
})

export const SearchResponse = Type.Object({
  q: Type.String(),
  match: Type.Union([Type.Literal('all'), Type.Literal('any'), Type.Literal('none')], {
    description: 'all: passages with every word; any: none had all, these have some; none: nothing found',
  }),
  results: Type.Array(Hit),
})

export const AiSettings = Type.Object({
  replies_enabled: Type.Boolean({ description: 'answer inbound chat messages from the knowledge documents' }),
  tags_enabled: Type.Boolean({ description: "suggest tags (origin ki) from the account's existing tags" }),
  replies_per_contact_per_hour: Type.Integer({ description: 'AI replies one contact can get per hour' }),
  available: Type.Boolean({ description: 'an AI endpoint is configured for this installation' }),
  active: Type.Boolean({ description: 'replies or tags are enabled and the endpoint is configured' }),
  reason: Nullable(Type.String(), 'why nothing is called (no endpoint configured, or both switched off)'),
  model: Nullable(Type.String(), 'HEROLD_AI_MODEL'),
  endpoint: Nullable(Type.String(), 'the host of HEROLD_AI_URL (the key is never shown)'),
  last_failure: Nullable(
    Type.Object({
      at: Type.String({ format: 'date-time' }),
      reason: Type.String({
        description: 'what went wrong: no answer in time, a status such as 500, no chat completion',
      }),
    }),
    'the last failed call to the AI endpoint for this account; the message it was about went to a person',
  ),
})

export const AiSettingsBody = Type.Object({
  replies_enabled: Type.Optional(Type.Boolean()),
  tags_enabled: Type.Optional(Type.Boolean()),
  replies_per_contact_per_hour: Type.Optional(Type.Integer({ minimum: 1, maximum: 60 })),
})

export const PromptPassage = Type.Object({
  document_id: Type.String({ format: 'uuid' }),
  document_title: Type.String(),
  position: Type.Integer(),
  heading: Type.String(),
  text: Type.String(),
  rank: Type.Number(),
  used: Type.Boolean({ description: 'the model named this passage as a source of its answer' }),
})

export const AiReply = Type.Object({
  id: Type.String({ format: 'uuid' }),
  inbound_message_id: Type.String({ format: 'uuid' }),
  message_id: Nullable(Type.String({ format: 'uuid' }), 'the reply (ai: true) when one was sent'),
  contact_id: Type.String({ format: 'uuid' }),
  conversation_id: Nullable(Type.String({ format: 'uuid' })),
  state: literals(AI_REPLY_STATES),
  reason: Nullable(Type.String(), 'why it was declined, skipped or failed'),
  question: Type.String(),
  reply: Nullable(Type.String()),
  passages: Type.Array(PromptPassage, { description: 'the passages the prompt held, as they were then' }),
  model: Nullable(Type.String()),
  created_at: at,
  updated_at: at,
})

export const AiReplyQuery = Type.Object({
  ...paginationQuery({ maxLimit: 100, defaultLimit: 25, maxOffset: 100_000 }),
  conversation_id: Type.Optional(Type.String({ format: 'uuid' })),
  message_id: Type.Optional(Type.String({ format: 'uuid', description: 'the inbound message or the reply' })),
})

export const AiReplyPage = pageSchema('ai_replies', AiReply)

export const RenameBody = Type.Object({
  title: Type.String({ minLength: 1, maxLength: 300, description: 'the title the document is found and cited by' }),
})

export const RefreshResponse = Type.Object({
  changed: Type.Boolean({ description: 'false: the address served the same bytes, nothing changed' }),
  document: Document,
})
