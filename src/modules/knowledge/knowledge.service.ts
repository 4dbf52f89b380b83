import { createHash, randomUUID } from 'node:crypto'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { toPage } from '../../platform/http/pagination.ts'
import { OutboundError, type OutboundHttp } from '../../platform/outbound-http.ts'
import { toPassages } from './knowledge.extract.ts'
import { extractDocumentOnThread } from './knowledge.extract-thread.ts'
import * as repo from './knowledge.repository.ts'
import type { SearchConfig } from './knowledge.tables.ts'

export type KnowledgeTenant = Pick<TenantContext, 'accountId'> & { account: Pick<TenantContext['account'], 'language'> }

/** A knowledge document may be at most 20 MB (a handbook PDF fits; the text inside is what counts). */
export const MAX_DOCUMENT_BYTES = 20 * 1024 * 1024
/** At most this many passages per document (about 4 million characters of text). */
export const MAX_PASSAGES = 5000

/** The text search configuration of an account's language: German, English, else language-neutral. */
export function searchConfigFor(language: string): SearchConfig {
  const base = language.toLowerCase().slice(0, 2)
  if (base === 'de') return 'german'
  if (base === 'en') return 'english'
  return 'simple'
}

export interface DocumentInput {
  data: Buffer
  filename: string
  mime: string
  source: 'upload' | 'url' | 'base64'
  sourceUrl?: string
}

export interface KnowledgeServiceDeps {
  db: Db
  clock: Clock
  /** downloads of the `url` form, through the SSRF guard */
  http: OutboundHttp
  /** HEROLD_ALLOW_PRIVATE_TARGETS: then http:// and private addresses may be fetched (tests, closed networks) */
  allowPrivateTargets: boolean
}

export function documentView(row: repo.DocumentRow) {
  return {
    id: row.id,
    title: row.title,
    filename: row.filename,
    format: row.format,
    mime: row.mime,
    size: row.sizeBytes,
    source: row.source,
    source_url: row.sourceUrl,
    search_language: row.searchConfig,
    passages: row.passageCount,
    characters: row.charCount,
    sha256: row.sha256,
    created_at: row.createdAt.toISOString(),
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** The file name of a download: Content-Disposition's, else the address's last path segment. */
export function downloadName(url: URL, disposition: string | undefined): string {
  const star = disposition?.match(/filename\*\s*=\s*(?:UTF-8'')?([^;]+)/i)?.[1]
  const plain = disposition?.match(/filename\s*=\s*"?([^";]+)"?/i)?.[1]
  let name = star ? safeDecode(star.trim().replace(/^"|"$/g, '')) : plain?.trim()
  if (!name) name = safeDecode(url.pathname.split('/').filter(Boolean).pop() ?? '')
  return (name || url.hostname).slice(0, 255)
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value)
  } catch {
    return value
  }
}

const stem = (filename: string) => filename.replace(/\.[a-z0-9]{1,10}$/i, '').trim() || filename

export function knowledgeService(deps: KnowledgeServiceDeps) {
  const { db, clock } = deps

  return {
    /** Stores a document: format from its bytes, text extracted and split into passages, indexed in one commit. */
    async add(tenant: KnowledgeTenant, input: DocumentInput) {
      if (input.data.length === 0) throw badRequest('The file is empty', 'document_no_text')
      if (input.data.length > MAX_DOCUMENT_BYTES) {
        throw badRequest(`A document may be at most ${MAX_DOCUMENT_BYTES / 1024 / 1024} MB`, 'document_too_large')
      }
      const filename = input.filename.trim().slice(0, 255)
      const extracted = await extractDocumentOnThread(input.data, filename, input.mime)
      const passages = toPassages(extracted.blocks)
      if (passages.length > MAX_PASSAGES) {
        throw badRequest(`The document holds more text than ${MAX_PASSAGES} passages`, 'document_too_large')
      }
      const row: repo.DocumentRow = {
        accountId: tenant.accountId,
        id: randomUUID(),
        title: (extracted.title ?? stem(filename)).slice(0, 300),
        filename,
        format: extracted.format,
        mime: extracted.mime,
        sizeBytes: input.data.length,
        source: input.source,
        sourceUrl: input.sourceUrl ?? null,
        searchConfig: searchConfigFor(tenant.account.language),
        sha256: createHash('sha256').update(input.data).digest('hex'),
        passageCount: passages.length,
        charCount: passages.reduce((sum, p) => sum + p.text.length, 0),
        createdAt: clock.now(),
      }
      await db.transaction(async (tx) => {
        await repo.insertDocument(tx, row)
        await repo.insertPassages(tx, row, passages)
      })
      return documentView(row)
    },

    /** The `url` form: a public https address downloaded through the SSRF guard (no redirects, 20 MB at most). */
    async download(url: string): Promise<DocumentInput> {
      let target: URL
      try {
        target = new URL(url)
      } catch {
        throw badRequest('url must be an absolute https address', 'document_url_invalid')
      }
      const allowed = target.protocol === 'https:' || (deps.allowPrivateTargets && target.protocol === 'http:')
      if (!allowed) throw badRequest('url must be a public https address', 'document_url_invalid')
      let response: Awaited<ReturnType<OutboundHttp['send']>>
      try {
        response = await deps.http.send(target.href, { method: 'GET', headers: { accept: '*/*' } })
      } catch (error) {
        if (!(error instanceof OutboundError)) throw error
        const key = error.code === 'blocked_target' ? 'document_url_blocked' : 'document_download_failed'
        throw badRequest(`The document could not be downloaded: ${error.message}`, key)
      }
      if (response.status < 200 || response.status > 299) {
        const redirect = response.status >= 300 && response.status < 400 ? ' (redirects are not followed)' : ''
        throw badRequest(
          `The document could not be downloaded: the server answered ${response.status}${redirect}`,
          'document_download_failed',
        )
      }
      if (response.body.length > MAX_DOCUMENT_BYTES) {
        throw badRequest(`A document may be at most ${MAX_DOCUMENT_BYTES / 1024 / 1024} MB`, 'document_too_large')
      }
      const header = (name: string) => {
        const value = response.headers[name]
        return Array.isArray(value) ? value[0] : value
      }
      return {
        data: response.body,
        filename: downloadName(target, header('content-disposition')),
        mime: header('content-type') ?? '',
        source: 'url',
        sourceUrl: target.href,
      }
    },

    async list(tenant: KnowledgeTenant, query: { limit: number; offset: number }) {
      const page = toPage(await repo.listDocuments(db, tenant.accountId, query), query.limit, query.offset)
      return { ...page, items: page.items.map(documentView) }
    },

    /** GET /knowledge/documents/{id}. */
    async get(tenant: KnowledgeTenant, id: string) {
      const row = UUID.test(id) ? await repo.findDocument(db, tenant.accountId, id) : undefined
      if (!row) throw notFound('document')
      return documentView(row)
    },

    /** What a two-step delete shows of the document: its id, title, file name and passages. */
    async summary(tenant: KnowledgeTenant, id: string) {
      const row = await repo.findDocument(db, tenant.accountId, id)
      if (!row) throw new AppError(404, 'not_found', 'No such knowledge document')
      return { id: row.id, title: row.title, filename: row.filename, passages: row.passageCount }
    },

    /** GET /app/knowledge/documents/{id}/passages: its passages in order, paged. */
    async passages(tenant: KnowledgeTenant, id: string, query: { limit: number; offset: number }) {
      const found = UUID.test(id) ? await repo.passagesOf(db, tenant.accountId, id, query) : undefined
      if (!found) throw notFound('document')
      const { limit, offset } = query
      return { passages: found.slice(0, limit), has_more: found.length > limit, limit, offset }
    },

    /** PATCH /knowledge/documents/{id}: a new title; the passages' search vectors are rebuilt (the title weighs B). */
    async rename(tenant: KnowledgeTenant, id: string, title: string) {
      const clean = title.trim().replace(/\s+/g, ' ')
      if (clean === '' || clean.length > 300) throw badRequest('title must hold 1 to 300 characters')
      const row = UUID.test(id) ? await repo.findDocument(db, tenant.accountId, id) : undefined
      if (!row) throw notFound('document')
      await db.transaction(async (tx) => {
        await repo.retitleDocument(tx, row, clean)
      })
      return documentView({ ...row, title: clean })
    },

    /**
     * POST /knowledge/documents/{id}/refresh: a document added from an address is downloaded again; when its bytes
     * changed, its text is extracted again and its passages replaced in one commit (same id, same title).
     */
    async refresh(tenant: KnowledgeTenant, id: string) {
      const row = UUID.test(id) ? await repo.findDocument(db, tenant.accountId, id) : undefined
      if (!row) throw notFound('document')
      if (row.source !== 'url' || !row.sourceUrl) {
        throw badRequest('Only a document added from an address can be fetched again', 'document_not_from_url')
      }
      const input = await this.download(row.sourceUrl)
      if (input.data.length === 0) throw badRequest('The file is empty', 'document_no_text')
      const sha256 = createHash('sha256').update(input.data).digest('hex')
      if (sha256 === row.sha256) return { changed: false, document: documentView(row) }
      const extracted = await extractDocumentOnThread(input.data, row.filename, input.mime)
      const passages = toPassages(extracted.blocks)
      if (passages.length > MAX_PASSAGES) {
        throw badRequest(`The document holds more text than ${MAX_PASSAGES} passages`, 'document_too_large')
      }
      const next: repo.DocumentRow = {
        ...row,
        format: extracted.format,
        mime: extracted.mime,
        sizeBytes: input.data.length,
        sha256,
        passageCount: passages.length,
        charCount: passages.reduce((sum, p) => sum + p.text.length, 0),
      }
      await db.transaction(async (tx) => {
        await repo.replaceDocument(tx, next)
        await repo.insertPassages(tx, next, passages)
      })
      return { changed: true, document: documentView(next) }
    },

    async remove(tenant: KnowledgeTenant, id: string) {
      const removed = UUID.test(id) ? await repo.deleteDocument(db, tenant.accountId, id) : undefined
      if (!removed) throw notFound('document')
      return { id: removed.id, deleted: true as const, passages: removed.passageCount }
    },

    /** Ranked passages: every word first; when nothing has them all, any of them (`match` says which). */
    async search(tenant: KnowledgeTenant, query: { q: string; limit: number }) {
      const q = query.q.trim()
      if (q === '') throw badRequest('q must not be empty', 'q_required')
      const results = await searchRanked(db, tenant.accountId, q, query.limit)
      return { q, match: results.match, results: results.hits.map(hitView) }
    },
  }
}

/** Ranked passages for `q`: all words, else any word; `any` directly for questions (the AI). */
export async function searchRanked(
  db: Db,
  accountId: string,
  q: string,
  limit: number,
  options: { mode?: 'any' } = {},
): Promise<{ match: 'all' | 'any' | 'none'; hits: repo.PassageHit[] }> {
  const configs = await repo.configsInUse(db, accountId)
  try {
    if (options.mode !== 'any') {
      const all = await repo.searchPassages(db, accountId, { q: webSearchText(q), mode: 'all', limit, configs })
      if (all.length > 0) return { match: 'all', hits: all }
    }
    const any = await repo.searchPassages(db, accountId, { q, mode: 'any', limit, configs })
    return { match: any.length > 0 ? 'any' : 'none', hits: any }
  } catch (error) {
    // the safety net behind webSearchText: a query PostgreSQL cannot build is the caller's input, not a fault
    if (isTsqueryError(error)) throw badRequest('q cannot be searched: too many operators', 'q_invalid')
    throw error
  }
}

/**
 * The text websearch_to_tsquery reads, without its operator runs: each `-` not directly before a word pushes a NOT
 * with nothing to negate, and 32 of them overflow PostgreSQL's parser ("tsquery stack too small"). A `-` counts only
 * before a letter or digit (-word, as documented); anywhere else it is a space, as the parser treats punctuation.
 */
export function webSearchText(q: string): string {
  return q.replace(/-(?![\p{L}\p{N}])/gu, ' ')
}

/** PostgreSQL's own refusals of a text-search query (raised as internal errors, XX000), through driver wrapping. */
function isTsqueryError(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const message = (e as { message?: unknown }).message
    if (typeof message === 'string' && /tsquery|text-search query/i.test(message)) return true
  }
  return false
}

export function hitView(hit: repo.PassageHit) {
  return {
    document: { id: hit.document_id, title: hit.title, filename: hit.filename, format: hit.format },
    position: hit.position,
    page: hit.page,
    heading: hit.heading,
    text: hit.text,
    snippet: hit.snippet,
    rank: Math.round(hit.rank * 1e6) / 1e6,
  }
}

export type KnowledgeService = ReturnType<typeof knowledgeService>
