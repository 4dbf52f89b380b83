import { randomUUID } from 'node:crypto'
import { mkdir, open, readFile, rm } from 'node:fs/promises'
import path from 'node:path'
import { and, desc, eq } from 'drizzle-orm'
import { fileTypeFromBuffer } from 'file-type'
import { imageSize } from 'image-size'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { toPage } from '../../platform/http/pagination.ts'
import { OutboundError, type OutboundHttp } from '../../platform/outbound-http.ts'
import type { Storage } from '../../platform/storage/storage.ts'
import { KIND_RULES, kindOf, MAX_UPLOAD_BYTES, mimeOfFilename, normalizeMime } from './media.rules.ts'
import { type MediaKind, type MediaUsage, media } from './media.tables.ts'

type MediaRow = typeof media.$inferSelect

/** Bytes read before deciding the type: file-type needs at most this many. */
const HEAD_BYTES = 4100

/**
 * Another module that refers to media (templates' header image, newsletters, follow-up steps, the landing page)
 * answers whether this file is in use, from its own index.ts; a non-empty answer makes DELETE a 409.
 */
export type MediaUsageCheck = (db: Db, accountId: string, item: { id: string; url: string }) => Promise<string[]>

/** An upload written to a temporary file and checked; `commit` stores it, `discard` forgets it. */
export interface Staged {
  file: string
  kind: MediaKind
  mime: string
  size: number
  width: number | null
  height: number | null
}

export interface MediaDeps {
  db: Db
  clock: Clock
  storage: Storage
  http: OutboundHttp
  publicUrl: string
  usageChecks: readonly MediaUsageCheck[]
  /** http as well as https addresses: only where private targets are allowed too (tests, closed networks) */
  allowPlainHttp: boolean
  /** where uploads are staged while they are checked: the process's own folder, created on first use */
  stagingDir: string
}

const fail = (key: string, message: string) => badRequest(message, key)

export function mediaService(deps: MediaDeps) {
  const { db, clock, storage } = deps
  const urlOf = (key: string) => `${deps.publicUrl}/public/media/${key}`

  function view(row: MediaRow) {
    return {
      id: row.id,
      kind: row.kind,
      usage: row.usage,
      url: urlOf(row.storageKey),
      mime: row.mime,
      size: row.size,
      ...(row.width !== null ? { width: row.width } : {}),
      ...(row.height !== null ? { height: row.height } : {}),
      filename: row.filename,
      created_at: row.createdAt.toISOString(),
    }
  }

  /**
   * Streams the bytes into a temporary file: the type comes from the first bytes (magic numbers), must be one the
   * library takes and agree with every claim (a multipart or HTTP Content-Type, the file name's extension); the
   * size must stay within WhatsApp's limit for the kind. Anything else stops the read at once and leaves nothing.
   */
  async function stage(
    body: AsyncIterable<Buffer | Uint8Array> | Iterable<Buffer | Uint8Array>,
    claims: { mime?: string | null; filename?: string | null; abort?: () => void },
  ): Promise<Staged> {
    await mkdir(deps.stagingDir, { recursive: true })
    const file = path.join(deps.stagingDir, `herold-media-${randomUUID()}`)
    const handle = await open(file, 'w')
    let size = 0
    let head: Buffer[] = []
    let headSize = 0
    let decided: { kind: MediaKind; mime: string } | null = null
    try {
      for await (const raw of body) {
        const chunk = Buffer.isBuffer(raw) ? raw : Buffer.from(raw)
        size += chunk.length
        if (!decided) {
          head.push(chunk)
          headSize += chunk.length
          if (headSize >= HEAD_BYTES) {
            decided = await decide(Buffer.concat(head), claims)
            head = []
          }
        }
        if (size > (decided ? KIND_RULES[decided.kind].maxBytes : MAX_UPLOAD_BYTES)) {
          throw tooLarge(decided?.kind ?? null)
        }
        await handle.write(chunk)
      }
      if (size === 0) throw fail('media_empty', 'The file is empty')
      decided ??= await decide(Buffer.concat(head), claims)
      if (size > KIND_RULES[decided.kind].maxBytes) throw tooLarge(decided.kind)
      await handle.close()
      let width: number | null = null
      let height: number | null = null
      if (decided.kind === 'image') {
        // images are at most 5 MB: read whole for their dimensions
        try {
          const dimensions = imageSize(await readFile(file))
          width = dimensions.width ?? null
          height = dimensions.height ?? null
        } catch {
          throw fail('media_invalid', 'The image could not be read (damaged or incomplete)')
        }
      }
      return { file, kind: decided.kind, mime: decided.mime, size, width, height }
    } catch (error) {
      claims.abort?.()
      await handle.close().catch(() => {})
      await rm(file, { force: true })
      throw error
    }
  }

  async function decide(
    head: Buffer,
    claims: { mime?: string | null; filename?: string | null },
  ): Promise<{ kind: MediaKind; mime: string }> {
    const detected = await fileTypeFromBuffer(head)
    const mime = normalizeMime(detected?.mime)
    const kind = mime ? kindOf(mime) : null
    if (!mime || !kind) {
      throw fail(
        'media_type_unsupported',
        `The content is ${detected ? `${detected.mime}` : 'of no known type'}; the library takes JPEG and PNG images, MP4 and 3GP videos and PDF documents`,
      )
    }
    const claimed = normalizeMime(claims.mime)
    if (claimed && claimed !== mime) {
      throw fail('media_type_mismatch', `The content is ${mime}, but it was declared as ${claimed}`)
    }
    if (claims.filename) {
      const byName = mimeOfFilename(claims.filename)
      if (byName !== undefined && byName !== mime) {
        throw fail(
          'media_type_mismatch',
          `The content is ${mime}, which does not match the file name ${claims.filename}`,
        )
      }
    }
    return { kind, mime }
  }

  function tooLarge(kind: MediaKind | null): AppError {
    if (!kind) return fail('media_too_large', 'The file is larger than 100 MB')
    const mb = KIND_RULES[kind].maxBytes / (1024 * 1024)
    return fail('media_too_large', `The ${kind} is larger than ${mb} MB, WhatsApp's limit for ${kind}s`)
  }

  const discard = (staged: Staged) => rm(staged.file, { force: true })

  /** Stores a staged upload and records it; the temporary file is gone either way. */
  async function commit(
    tenant: Pick<TenantContext, 'accountId'>,
    staged: Staged,
    input: { usage?: MediaUsage; filename?: string | null; source: 'file' | 'url' | 'base64' },
  ) {
    try {
      const key = await storage.putFile(tenant.accountId, staged.file, staged.mime)
      try {
        const [row] = await db
          .insert(media)
          .values({
            accountId: tenant.accountId,
            id: randomUUID(),
            kind: staged.kind,
            usage: input.usage ?? 'generic',
            mime: staged.mime,
            size: staged.size,
            width: staged.width,
            height: staged.height,
            filename: input.filename ?? null,
            source: input.source,
            storageKey: key,
            createdAt: clock.now(),
          })
          .returning()
        return view(row)
      } catch (error) {
        await storage.delete(key).catch(() => {})
        throw error
      }
    } finally {
      await discard(staged)
    }
  }

  async function fromBase64(
    tenant: Pick<TenantContext, 'accountId'>,
    input: { data_base64: string; filename: string; mime: string; usage?: MediaUsage },
  ) {
    const text = input.data_base64.replace(/^data:[^,]*;base64,/, '').replace(/\s+/g, '')
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 === 1) {
      throw fail('media_base64_invalid', 'data_base64 is not valid base64')
    }
    const data = Buffer.from(text, 'base64')
    const staged = await stage([data], { mime: input.mime, filename: input.filename })
    return commit(tenant, staged, { usage: input.usage, filename: input.filename, source: 'base64' })
  }

  /** data_base64 already decoded from the request's bytes (platform/http/base64-body.ts). */
  async function fromBytes(
    tenant: Pick<TenantContext, 'accountId'>,
    input: { data: Buffer; filename: string; mime: string; usage?: MediaUsage },
  ) {
    // a megabyte at a time: the type is read from the first, and writing them lets other requests run between
    const pieces = function* () {
      for (let at = 0; at < input.data.length; at += 1024 * 1024) yield input.data.subarray(at, at + 1024 * 1024)
    }
    const staged = await stage(pieces(), { mime: input.mime, filename: input.filename })
    return commit(tenant, staged, { usage: input.usage, filename: input.filename, source: 'base64' })
  }

  async function fromUrl(tenant: Pick<TenantContext, 'accountId'>, input: { url: string; usage?: MediaUsage }) {
    let parsed: URL
    try {
      parsed = new URL(input.url)
    } catch {
      throw fail('media_url_invalid', 'url is not an absolute address')
    }
    if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && deps.allowPlainHttp)) {
      throw fail('media_url_invalid', 'url must be an https address')
    }
    let download: Awaited<ReturnType<OutboundHttp['download']>>
    try {
      download = await deps.http.download(parsed.toString())
    } catch (error) {
      throw downloadFailed(error)
    }
    const declared = Number(download.headers['content-length'])
    if (Number.isFinite(declared) && declared > MAX_UPLOAD_BYTES) {
      download.body.destroy()
      throw fail('media_too_large', 'The file is larger than 100 MB')
    }
    const contentType = download.headers['content-type']
    const filename = decodeURIComponent(new URL(download.url).pathname.split('/').pop() ?? '') || null
    let staged: Staged
    try {
      staged = await stage(download.body, {
        mime: typeof contentType === 'string' && !contentType.startsWith('text/') ? contentType : null,
        filename,
        abort: () => download.body.destroy(),
      })
    } catch (error) {
      if (error instanceof AppError) throw error
      throw downloadFailed(error)
    }
    return commit(tenant, staged, { usage: input.usage, filename, source: 'url' })
  }

  function downloadFailed(error: unknown): AppError {
    if (error instanceof AppError) return error
    const reason = error instanceof OutboundError ? error.message : 'the download broke off'
    const key =
      error instanceof OutboundError && error.code === 'blocked_target' ? 'media_url_blocked' : 'media_download_failed'
    return fail(key, `The file could not be downloaded: ${reason}`)
  }

  async function list(
    tenant: Pick<TenantContext, 'accountId'>,
    query: { kind?: MediaKind; limit: number; offset: number },
  ) {
    const rows = await db
      .select()
      .from(media)
      .where(and(eq(media.accountId, tenant.accountId), query.kind ? eq(media.kind, query.kind) : undefined))
      .orderBy(desc(media.createdAt), desc(media.id))
      .limit(query.limit + 1)
      .offset(query.offset)
    const page = toPage(rows, query.limit, query.offset)
    return { ...page, items: page.items.map(view) }
  }

  async function find(accountId: string, id: string): Promise<MediaRow> {
    const [row] = await db
      .select()
      .from(media)
      .where(and(eq(media.accountId, accountId), eq(media.id, id)))
    if (!row) throw notFound('media')
    return row
  }

  async function get(tenant: Pick<TenantContext, 'accountId'>, id: string) {
    return view(await find(tenant.accountId, id))
  }

  /** 409 media_in_use while anything refers to it; otherwise the row goes, then the bytes. */
  async function remove(tenant: Pick<TenantContext, 'accountId'>, id: string) {
    const row = await find(tenant.accountId, id)
    const item = { id: row.id, url: urlOf(row.storageKey) }
    const users = (await Promise.all(deps.usageChecks.map((check) => check(db, tenant.accountId, item)))).flat()
    if (users.length > 0) {
      throw new AppError(409, 'media_in_use', `The file is still used by: ${users.join(', ')}`, {
        details: { used_by: users },
      })
    }
    await db.delete(media).where(and(eq(media.accountId, tenant.accountId), eq(media.id, id)))
    await storage.delete(row.storageKey).catch(() => {})
    return { ok: true, id }
  }

  /** GET /media/{id}/usages: what refers to the file (what makes DELETE a 409). */
  async function usages(tenant: Pick<TenantContext, 'accountId'>, id: string) {
    const row = await find(tenant.accountId, id)
    const item = { id: row.id, url: urlOf(row.storageKey) }
    const users = (await Promise.all(deps.usageChecks.map((check) => check(db, tenant.accountId, item)))).flat()
    return { media_id: row.id, in_use: users.length > 0, used_by: users }
  }

  /** PATCH /media/{id}: the file name shown in the library and the usage; the bytes and the address stay. */
  async function update(
    tenant: Pick<TenantContext, 'accountId'>,
    id: string,
    input: { filename?: string; usage?: MediaUsage },
  ) {
    if (input.filename === undefined && input.usage === undefined) throw badRequest('Give filename or usage')
    const row = await find(tenant.accountId, id)
    const [saved] = await db
      .update(media)
      .set({
        ...(input.filename !== undefined ? { filename: input.filename.trim() } : {}),
        ...(input.usage !== undefined ? { usage: input.usage } : {}),
      })
      .where(and(eq(media.accountId, tenant.accountId), eq(media.id, row.id)))
      .returning()
    return view(saved)
  }

  return {
    stage,
    commit,
    discard,
    fromBase64,
    fromBytes,
    fromUrl,
    list,
    get,
    remove,
    usages,
    update,
  }
}

export type MediaService = ReturnType<typeof mediaService>
