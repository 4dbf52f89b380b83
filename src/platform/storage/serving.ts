import { fileTypeFromBuffer } from 'file-type'
import type { Storage } from './storage.ts'

// How a stored file (inbound media, the media library) is answered on Herold's own origin, where the console and its
// session cookie live. Whatever a customer sent must stay inert there: no browser may run it as a page or a script.
// Only a few types a browser shows without running anything are answered inline; every other type is a download
// (`attachment`, application/octet-stream). Every answer, inline or not, carries a sandboxing CSP, nosniff and a
// no-framing rule, so that even a file stored under a wrong type cannot script.

/** Images a browser draws without running anything (SVG is not one: it can carry script). */
const INLINE_IMAGES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp'])

/** audio/* and video/*, but no XML-based type (`+xml` can be a document that scripts). */
const AUDIO_VIDEO = /^(audio|video)\/[a-z0-9][a-z0-9.!#$&^_-]*$/

/** A charset that is safe to keep on text/plain (no UTF-7, which old browsers read as markup). */
const CHARSET = /^[a-z0-9][a-z0-9._:-]{0,39}$/

/**
 * The sandbox makes the answer its own opaque origin with no script, no forms, no plugins; nothing is fetched but
 * the file itself (an image or a video shown on its own); nobody may frame it.
 */
export const STORED_FILE_CSP = "default-src 'none'; img-src 'self'; media-src 'self'; frame-ancestors 'none'; sandbox"

/** The bare type: lower case, parameters dropped; empty when nothing was claimed. */
export function bareType(mime: string | null | undefined): string {
  return (mime ?? '').split(';')[0].trim().toLowerCase()
}

/** Whether a browser shows this type inline without running anything in it. */
export function inlineType(mime: string): boolean {
  const type = bareType(mime)
  return INLINE_IMAGES.has(type) || AUDIO_VIDEO.test(type) || type === 'text/plain'
}

const EXTENSIONS: Record<string, string> = {
  'application/pdf': 'pdf',
  'text/html': 'html',
  'application/xhtml+xml': 'xhtml',
  'image/svg+xml': 'svg',
  'application/xml': 'xml',
  'text/xml': 'xml',
  'text/javascript': 'js',
  'application/javascript': 'js',
  'text/csv': 'csv',
  'text/calendar': 'ics',
  'text/vcard': 'vcf',
  'application/zip': 'zip',
  'application/msword': 'doc',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.ms-excel': 'xls',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
}

/** text/plain with its charset when that is a safe one. */
function plainText(mime: string): string {
  const charset = /;\s*charset="?([^";\s]+)"?/i.exec(mime)?.[1]?.toLowerCase()
  return charset && CHARSET.test(charset) && !charset.startsWith('utf-7')
    ? `text/plain; charset=${charset}`
    : 'text/plain'
}

/**
 * The type to store a received file under, from the type its sender claimed and the bytes themselves (file-type's
 * magic numbers): a recognised inline type wins whatever the claim (a PNG is a PNG); a claimed image, audio, video
 * or PDF whose bytes are not recognised as an inline type or PDF is stored as application/octet-stream (a download);
 * text/plain keeps a safe charset; any other claim is kept as it is (it is a download anyway). The message keeps
 * the claimed type as its media_mime.
 */
export async function storedTypeOf(claimed: string, data: Buffer): Promise<string> {
  const type = bareType(claimed)
  const detected = bareType((await fileTypeFromBuffer(data.subarray(0, 4100)).catch(() => undefined))?.mime)
  if (detected && (inlineType(detected) || detected === 'application/pdf')) return detected
  if (type === 'text/plain') return detected ? 'application/octet-stream' : plainText(claimed)
  if (inlineType(type) || type === 'application/pdf') return 'application/octet-stream'
  return type && /^[a-z0-9][a-z0-9.!#$&^_+-]*\/[a-z0-9][a-z0-9.!#$&^_+-]*$/.test(type)
    ? type
    : 'application/octet-stream'
}

/**
 * Stores a file a customer sent under the type it is served as (storedTypeOf); the caller keeps the claimed type as
 * the message's media_mime. Returns the storage key.
 */
export async function storeReceived(
  storage: Storage,
  accountId: string,
  file: { data: Buffer; mime: string },
): Promise<string> {
  return storage.put(accountId, file.data, await storedTypeOf(file.mime, file.data))
}

/**
 * The headers of a stored file's answer, whatever type it was stored under (also files stored before these rules).
 * Inline: its bare type (text/plain with a safe charset). A PDF: its type, but as a download (Chrome shows no PDF
 * under a sandbox). Anything else: application/octet-stream as a download named `<file id>.<ext>`. Inline files may
 * be drawn by other sites (a newsletter's header image in a web mail); downloads are for Herold's own site only.
 */
export function storedFileHeaders(mime: string, fileId: string): Record<string, string> {
  const name = fileId.replace(/[^0-9A-Za-z-]/g, '').slice(0, 64) || 'file'
  const common = {
    'content-security-policy': STORED_FILE_CSP,
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
  }
  const type = bareType(mime)
  if (inlineType(type)) {
    const served = type === 'text/plain' ? plainText(mime) : type
    return { ...common, 'content-type': served, 'cross-origin-resource-policy': 'cross-origin' }
  }
  const pdf = type === 'application/pdf'
  return {
    ...common,
    'content-type': pdf ? 'application/pdf' : 'application/octet-stream',
    'content-disposition': `attachment; filename="${name}.${EXTENSIONS[type] ?? 'bin'}"`,
    'cross-origin-resource-policy': 'same-site',
  }
}
