import path from 'node:path'
import { and, eq } from 'drizzle-orm'
import type { Db } from '../../platform/db/client.ts'
import { AppError, badRequest } from '../../platform/http/errors.ts'
import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import { createOutboundHttp } from '../../platform/outbound-http.ts'
import { storageOf } from '../../platform/storage/storage.ts'
import { mediaRoutes } from './media.routes.ts'
import { type MediaService, type MediaUsageCheck, mediaService } from './media.service.ts'
import { media } from './media.tables.ts'
import { mediaTools } from './media.tools.ts'

/** A header image as given in a body: a media library id, or a public https address (with its type). */
export interface HeaderImageInput {
  media_id?: string
  url?: string
  mime_type?: string | null
}

/** A header image as stored: `media_id` when it is a library file, whose public address is then `url`. */
export interface HeaderImage {
  media_id?: string
  url: string
  mime_type?: string | null
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * Resolves a header image of a template or newsletter: a `media_id` of the account's library becomes the file's
 * public address and type (another account's id, or none, is a 404 with key media_not_found; a video or a PDF is a
 * 400 header_media_not_image); a `url` stays as given (the template check judges it). Both or neither: 400.
 */
export async function resolveHeaderImage(
  db: Db,
  publicUrl: string,
  accountId: string,
  input: HeaderImageInput,
): Promise<HeaderImage> {
  const hasId = input.media_id !== undefined
  const hasUrl = input.url !== undefined
  if (hasId === hasUrl) {
    throw badRequest(
      'header_media needs either media_id (a media library file) or url, not both',
      'header_media_form',
      {
        field: 'header_media',
      },
    )
  }
  if (!hasId) return { url: input.url as string, ...(input.mime_type ? { mime_type: input.mime_type } : {}) }
  const id = input.media_id as string
  const [row] = UUID.test(id)
    ? await db
        .select()
        .from(media)
        .where(and(eq(media.accountId, accountId), eq(media.id, id)))
    : []
  if (!row) {
    throw new AppError(404, 'not_found', `media ${id} not found`, { key: 'media_not_found', details: { media_id: id } })
  }
  if (row.kind !== 'image') {
    throw badRequest(
      `media ${id} is a ${row.kind}; a header image must be an image (JPEG or PNG)`,
      'header_media_not_image',
      {
        media_id: id,
      },
    )
  }
  return { media_id: row.id, url: `${publicUrl}/public/media/${row.storageKey}`, mime_type: row.mime }
}

/**
 * The media library service and its download client (the composition root closes it). `usageChecks` are the other
 * modules' `reactions.mediaUsage`, as the composition root collected them: records that refer to a file (a template's
 * or a newsletter's header image, the landing page's logo); DELETE /media/{id} is a 409 while any answers.
 */
export function createMediaService(deps: PlatformDeps, usageChecks: readonly MediaUsageCheck[]) {
  const http = createOutboundHttp({ allowPrivateTargets: deps.config.allowPrivateTargets })
  const service = mediaService({
    db: deps.database.orm,
    clock: deps.clock,
    storage: storageOf(deps.config),
    // a download may take a while: 5 s to connect and get the headers, then 30 s at most between two chunks
    http,
    publicUrl: deps.config.publicUrl,
    usageChecks,
    allowPlainHttp: deps.config.allowPrivateTargets,
    stagingDir: path.join(deps.config.dataDir, 'tmp'),
  })
  return { service, http }
}

export const mediaModule: HeroldModule<{ media: MediaService }> = {
  name: 'media',
  tools: mediaTools,
  routes: (_deps, { media }) => mediaRoutes(media),
}

export type { MediaUsageCheck } from './media.service.ts'
