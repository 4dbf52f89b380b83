import { badRequest } from '../../platform/http/errors.ts'

// What one document may cost to read. A DOCX is a ZIP archive: its central directory says what each part inflates
// to, and is checked before mammoth inflates anything (a 400 KB file can inflate to gigabytes). A PDF is refused above
// MAX_PDF_PAGES pages before its text is read. Beyond these, extraction runs on a worker thread with its own heap
// limit and a time limit (knowledge.extract-thread.ts), so a file these checks let through still cannot stop the
// server.

/** Parts of a DOCX archive (a long report with many images has a few hundred). */
export const MAX_ZIP_ENTRIES = 5000
/** What all parts of a DOCX together may inflate to. */
export const MAX_ZIP_INFLATED_BYTES = 100 * 1024 * 1024
/** How much larger than its compressed size one part may inflate (Word's XML compresses about 5 to 20 times). */
export const MAX_ZIP_RATIO = 100
/** Pages of a PDF. */
export const MAX_PDF_PAGES = 500

export const tooComplex = (message: string, details?: Record<string, unknown>) =>
  badRequest(message, 'document_too_complex', details)

const unreadable = () => badRequest('The Word document cannot be read: it is damaged', 'document_unreadable')

/**
 * Checks a ZIP archive's central directory against the limits above without inflating anything: entry count, the
 * inflated size of all entries and each entry's ratio. ZIP64 archives (over 4 GB or 65,535 entries) are refused.
 */
export function checkZipLimits(data: Buffer): void {
  // the end-of-central-directory record: 22 bytes plus a comment of at most 65,535, at the end of the file
  let end = -1
  for (let at = data.length - 22; at >= Math.max(0, data.length - 22 - 0xffff); at--) {
    if (data.readUInt32LE(at) === 0x06054b50) {
      end = at
      break
    }
  }
  if (end < 0) throw unreadable()
  const entries = data.readUInt16LE(end + 10)
  const directorySize = data.readUInt32LE(end + 12)
  const directoryOffset = data.readUInt32LE(end + 16)
  if (entries === 0xffff || directoryOffset === 0xffffffff || directorySize === 0xffffffff) {
    throw tooComplex('The Word document is a ZIP64 archive; a .docx that large cannot be read')
  }
  if (entries > MAX_ZIP_ENTRIES) {
    throw tooComplex(`The Word document has ${entries} parts; at most ${MAX_ZIP_ENTRIES} are read`, {
      limit: 'entries',
    })
  }
  if (directoryOffset + directorySize > end) throw unreadable()
  let at = directoryOffset
  let inflated = 0
  for (let i = 0; i < entries; i++) {
    if (at + 46 > end || data.readUInt32LE(at) !== 0x02014b50) throw unreadable()
    const compressed = data.readUInt32LE(at + 20)
    const size = data.readUInt32LE(at + 24)
    if (compressed === 0xffffffff || size === 0xffffffff) {
      throw tooComplex('The Word document is a ZIP64 archive; a .docx that large cannot be read')
    }
    const name = data.toString('utf8', at + 46, at + 46 + data.readUInt16LE(at + 28))
    inflated += size
    if (size > 1024 * 1024 && size > Math.max(compressed, 1) * MAX_ZIP_RATIO) {
      throw tooComplex(
        `The Word document's part ${name} inflates ${Math.round(size / Math.max(compressed, 1))} times (to ${Math.round(size / 1024 / 1024)} MB); at most ${MAX_ZIP_RATIO} times is read`,
        { limit: 'ratio' },
      )
    }
    at += 46 + data.readUInt16LE(at + 28) + data.readUInt16LE(at + 30) + data.readUInt16LE(at + 32)
  }
  if (inflated > MAX_ZIP_INFLATED_BYTES) {
    throw tooComplex(
      `The Word document inflates to ${Math.round(inflated / 1024 / 1024)} MB; at most ${MAX_ZIP_INFLATED_BYTES / 1024 / 1024} MB is read`,
      { limit: 'inflated_size' },
    )
  }
}
