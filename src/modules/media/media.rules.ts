import type { MediaKind } from './media.tables.ts'

const MB = 1024 * 1024

/** What WhatsApp accepts per kind (Cloud API media limits): types and the largest size. */
export const KIND_RULES: Record<MediaKind, { mimes: readonly string[]; maxBytes: number }> = {
  image: { mimes: ['image/jpeg', 'image/png'], maxBytes: 5 * MB },
  video: { mimes: ['video/mp4', 'video/3gpp'], maxBytes: 16 * MB },
  document: { mimes: ['application/pdf'], maxBytes: 100 * MB },
}

/** The most any upload may be, whatever its kind (the spec's limit for a download by url). */
export const MAX_UPLOAD_BYTES = 100 * MB

/** The kind of a detected mime type, or null when the library does not take it. */
export function kindOf(mime: string): MediaKind | null {
  for (const [kind, rule] of Object.entries(KIND_RULES) as Array<[MediaKind, (typeof KIND_RULES)[MediaKind]]>) {
    if (rule.mimes.includes(mime)) return kind
  }
  return null
}

const ALIASES: Record<string, string> = {
  'image/jpg': 'image/jpeg',
  'image/pjpeg': 'image/jpeg',
  'video/x-m4v': 'video/mp4',
  'video/3gpp2': 'video/3gpp',
  'application/x-pdf': 'application/pdf',
}

/** A claimed type in its usual spelling, parameters dropped; null when it claims nothing (absent, octet-stream). */
export function normalizeMime(raw: string | undefined | null): string | null {
  const mime = raw?.split(';')[0].trim().toLowerCase()
  if (!mime || mime === 'application/octet-stream' || mime === 'binary/octet-stream') return null
  return ALIASES[mime] ?? mime
}

const EXTENSIONS: Record<string, string> = {
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  png: 'image/png',
  mp4: 'video/mp4',
  m4v: 'video/mp4',
  '3gp': 'video/3gpp',
  pdf: 'application/pdf',
}

/** The type a file name's extension claims; undefined without an extension, null for one we do not know. */
export function mimeOfFilename(filename: string): string | null | undefined {
  const match = filename.match(/\.([A-Za-z0-9]+)$/)
  if (!match) return undefined
  return EXTENSIONS[match[1].toLowerCase()] ?? null
}
