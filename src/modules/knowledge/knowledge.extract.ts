import { Parser } from 'htmlparser2'
import { badRequest } from '../../platform/http/errors.ts'
import { checkZipLimits, MAX_PDF_PAGES } from './knowledge.limits.ts'
import type { DocumentFormat } from './knowledge.tables.ts'

/** A run of text under the heading that precedes it; `page` for PDFs. */
export interface Block {
  heading: string
  text: string
  page: number | null
  /** the block is itself a heading (it starts a new section) */
  isHeading?: boolean
}

export interface Extracted {
  format: DocumentFormat
  mime: string
  blocks: Block[]
  /** the document's own title (HTML <title>, first top heading), when it has one */
  title: string | null
}

const MIME_OF: Record<DocumentFormat, string> = {
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  txt: 'text/plain',
  markdown: 'text/markdown',
  html: 'text/html',
}

const EXTENSIONS: Record<string, DocumentFormat> = {
  pdf: 'pdf',
  docx: 'docx',
  txt: 'txt',
  text: 'txt',
  md: 'markdown',
  markdown: 'markdown',
  html: 'html',
  htm: 'html',
}

const MIMES: Record<string, DocumentFormat> = {
  'application/pdf': 'pdf',
  [MIME_OF.docx]: 'docx',
  'text/plain': 'txt',
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
  'text/html': 'html',
  'application/xhtml+xml': 'html',
}

/** What the name and the claimed type say the document is (the extension wins), or null when they say nothing. */
export function claimedFormat(filename: string, mime: string): DocumentFormat | null {
  const extension = filename.toLowerCase().match(/\.([a-z0-9]+)$/)?.[1]
  if (extension && extension in EXTENSIONS) return EXTENSIONS[extension]
  const type = mime.toLowerCase().split(';')[0].trim()
  return MIMES[type] ?? null
}

const BINARY_SIGNATURES: Array<[string, string]> = [
  ['89504e47', 'a PNG image'],
  ['ffd8ff', 'a JPEG image'],
  ['47494638', 'a GIF image'],
  ['52494646', 'a RIFF file (WebP, WAV, AVI)'],
  ['000000', 'a video or binary file'],
  ['1f8b', 'a gzip archive'],
  ['d0cf11e0', 'an old Office document (.doc); save it as .docx'],
  ['7b5c727466', 'an RTF document'],
]

/**
 * The format by the content's own bytes: PDF and DOCX by their signatures, the text formats by being text. The
 * name and claimed type only choose between the text formats (Markdown, HTML, plain text).
 */
export function detectFormat(data: Buffer, filename: string, mime: string): DocumentFormat {
  const claimed = claimedFormat(filename, mime)
  let detected: DocumentFormat
  if (data.subarray(0, 5).toString('latin1') === '%PDF-') detected = 'pdf'
  else if (data.subarray(0, 4).toString('hex') === '504b0304') {
    if (!data.includes('word/document.xml')) {
      throw unsupported('The file is a ZIP archive but not a Word document (.docx)')
    }
    detected = 'docx'
  } else {
    const head = data.subarray(0, 8192)
    const hex = head.subarray(0, 8).toString('hex')
    const binary = BINARY_SIGNATURES.find(([signature]) => hex.startsWith(signature))
    if (binary && !(binary[0] === '000000' && !head.includes(0))) {
      throw unsupported(`The file is ${binary[1]}, not a PDF, DOCX, text, Markdown or HTML document`)
    }
    if (head.includes(0) && !isUtf16(head)) {
      throw unsupported('The file is binary, not a PDF, DOCX, text, Markdown or HTML document')
    }
    if (claimed === 'markdown' || claimed === 'html' || claimed === 'txt') detected = claimed
    else detected = /^\s*(<!doctype html|<html[\s>])/i.test(decodeText(head)) ? 'html' : 'txt'
  }
  if (claimed !== null && claimed !== detected && !(isTextFormat(claimed) && isTextFormat(detected))) {
    throw badRequest(
      `The content is ${FORMAT_NAMES[detected]} but the name or type says ${FORMAT_NAMES[claimed]}`,
      'document_type_mismatch',
      { detected: detected, claimed },
    )
  }
  return detected
}

const FORMAT_NAMES: Record<DocumentFormat, string> = {
  pdf: 'a PDF',
  docx: 'a Word document (DOCX)',
  txt: 'plain text',
  markdown: 'Markdown',
  html: 'HTML',
}

const isTextFormat = (format: DocumentFormat) => format === 'txt' || format === 'markdown' || format === 'html'

function unsupported(message: string) {
  return badRequest(message, 'document_type_unsupported')
}

function isUtf16(head: Buffer): boolean {
  return (head[0] === 0xff && head[1] === 0xfe) || (head[0] === 0xfe && head[1] === 0xff)
}

/** UTF-8 (the usual case), UTF-16 with a byte-order mark, else Windows-1252 (old German text files). */
export function decodeText(data: Buffer): string {
  if (data[0] === 0xff && data[1] === 0xfe) return new TextDecoder('utf-16le').decode(data.subarray(2))
  if (data[0] === 0xfe && data[1] === 0xff) return new TextDecoder('utf-16be').decode(data.subarray(2))
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(data)
  } catch {
    return new TextDecoder('windows-1252').decode(data)
  }
}

const clean = (text: string) => text.replace(/[\s\u00a0]+/g, ' ').trim()

/** Paragraphs of plain text: blank lines separate them. */
function textBlocks(text: string, page: number | null = null): Block[] {
  return text
    .split(/\r?\n\s*\r?\n/)
    .map(clean)
    .filter((t) => t !== '')
    .map((t) => ({ heading: '', text: t, page }))
}

const BLOCK_TAGS = new Set([
  'p',
  'div',
  'li',
  'ul',
  'ol',
  'tr',
  'table',
  'section',
  'article',
  'main',
  'header',
  'footer',
  'aside',
  'blockquote',
  'pre',
  'dd',
  'dt',
  'dl',
  'figure',
  'figcaption',
  'br',
  'hr',
  'form',
  'nav',
  'td',
  'th',
])
const SKIPPED_TAGS = new Set(['script', 'style', 'noscript', 'template', 'svg', 'head', 'iframe', 'object'])

/** Blocks of an HTML page (also DOCX and Markdown, rendered to HTML first): h1–h6 start a section. */
export function htmlBlocks(html: string): { blocks: Block[]; title: string | null } {
  const blocks: Block[] = []
  let heading = ''
  let current = ''
  let headingText: string | null = null
  let skipping = 0
  let inTitle = false
  let title = ''
  let firstH1: string | null = null
  let h1Count = 0
  const flush = () => {
    const text = clean(current)
    current = ''
    if (text) blocks.push({ heading, text, page: null })
  }
  const parser = new Parser(
    {
      onopentag(name) {
        if (name === 'title') inTitle = true
        if (SKIPPED_TAGS.has(name)) skipping++
        if (skipping > 0) return
        if (/^h[1-6]$/.test(name)) {
          flush()
          headingText = ''
        } else if (BLOCK_TAGS.has(name)) {
          if (headingText !== null) headingText += ' '
          else flush()
        }
      },
      ontext(text) {
        if (inTitle) title += text
        if (skipping > 0) return
        if (headingText !== null) headingText += text
        else current += text
      },
      onclosetag(name) {
        if (name === 'title') inTitle = false
        if (SKIPPED_TAGS.has(name)) {
          skipping = Math.max(0, skipping - 1)
          return
        }
        if (skipping > 0) return
        if (/^h[1-6]$/.test(name) && headingText !== null) {
          heading = clean(headingText)
          if (name === 'h1' && heading) {
            h1Count++
            firstH1 ??= heading
          }
          if (heading) blocks.push({ heading, text: heading, page: null, isHeading: true })
          headingText = null
        } else if (BLOCK_TAGS.has(name) && headingText === null) flush()
      },
    },
    { decodeEntities: true, lowerCaseTags: true },
  )
  parser.write(html)
  parser.end()
  flush()
  // one h1 names the page; several are sections
  return { blocks, title: clean(title) || (h1Count === 1 ? firstH1 : null) }
}

/**
 * Lines of a PDF page from its text items; a short line set clearly larger than the document's body text is a
 * heading (PDFs carry no structure, only font sizes).
 */
async function pdfBlocks(data: Buffer): Promise<Block[]> {
  // the document libraries load with the first document of their kind, not with every process
  const { extractTextItems, getDocumentProxy } = await import('unpdf')
  let pages: Awaited<ReturnType<typeof extractTextItems>>['items']
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>
  try {
    pdf = await getDocumentProxy(new Uint8Array(data))
  } catch (error) {
    const reason = (error as Error).name === 'PasswordException' ? 'it is encrypted with a password' : 'it is damaged'
    throw badRequest(`The PDF cannot be read: ${reason}`, 'document_unreadable')
  }
  if (pdf.numPages > MAX_PDF_PAGES) {
    throw badRequest(
      `The PDF has ${pdf.numPages} pages; at most ${MAX_PDF_PAGES} are read (split it into several documents)`,
      'document_too_many_pages',
      { pages: pdf.numPages, max_pages: MAX_PDF_PAGES },
    )
  }
  try {
    pages = (await extractTextItems(pdf)).items
  } catch (error) {
    const reason = (error as Error).name === 'PasswordException' ? 'it is encrypted with a password' : 'it is damaged'
    throw badRequest(`The PDF cannot be read: ${reason}`, 'document_unreadable')
  }
  const lines: Array<{ page: number; text: string; size: number }> = []
  pages.forEach((items, index) => {
    let text = ''
    let size = 0
    for (const item of items) {
      text += item.str
      if (item.str.trim()) size = Math.max(size, item.fontSize)
      if (item.hasEOL) {
        lines.push({ page: index + 1, text, size })
        text = ''
        size = 0
      }
    }
    if (text.trim()) lines.push({ page: index + 1, text, size })
  })
  const sizes = lines
    .filter((l) => l.text.trim())
    .map((l) => l.size)
    .sort((a, b) => a - b)
  const body = sizes[Math.floor(sizes.length / 2)] ?? 0
  const blocks: Block[] = []
  let heading = ''
  let paragraph: string[] = []
  let page = 1
  const flush = () => {
    const text = clean(paragraph.join(' '))
    if (text) blocks.push({ heading, text, page })
    paragraph = []
  }
  for (const line of lines) {
    const text = clean(line.text)
    if (!text) {
      flush()
      continue
    }
    if (paragraph.length === 0) page = line.page
    if (body > 0 && line.size >= body * 1.2 && text.length <= 120) {
      flush()
      heading = text
      blocks.push({ heading, text, page: line.page, isHeading: true })
      continue
    }
    paragraph.push(text)
  }
  flush()
  return blocks
}

/** The text of a document as blocks under their headings; 400 with the reason when it has none. */
export async function extractDocument(data: Buffer, filename: string, mime: string): Promise<Extracted> {
  const format = detectFormat(data, filename, mime)
  let blocks: Block[]
  let title: string | null = null
  if (format === 'pdf') blocks = await pdfBlocks(data)
  else if (format === 'docx') {
    checkZipLimits(data)
    let html: string
    try {
      const { default: mammoth } = await import('mammoth')
      html = (await mammoth.convertToHtml({ buffer: data })).value
    } catch {
      throw badRequest('The Word document cannot be read: it is damaged', 'document_unreadable')
    }
    // Word keeps the title in its properties, not in the text: the file name names it
    blocks = htmlBlocks(html).blocks
  } else if (format === 'html') ({ blocks, title } = htmlBlocks(decodeText(data)))
  else if (format === 'markdown') {
    const { marked } = await import('marked')
    ;({ blocks, title } = htmlBlocks(await marked.parse(decodeText(data), { async: true })))
  } else blocks = textBlocks(decodeText(data))
  if (!blocks.some((b) => b.text.trim() !== '')) {
    const reason =
      format === 'pdf'
        ? 'The PDF contains no extractable text (a scan without a text layer needs OCR first)'
        : `The ${FORMAT_NAMES[format].replace(/^an? /, '')} document contains no text`
    throw badRequest(reason, 'document_no_text', { format })
  }
  return { format, mime: MIME_OF[format], blocks, title }
}

export interface Passage {
  position: number
  heading: string
  text: string
  page: number | null
}

export const PASSAGE_TARGET_CHARS = 900
export const PASSAGE_MAX_CHARS = 1500

/** Splits a paragraph longer than the maximum at sentence ends, else at spaces. */
function splitLong(text: string, max: number): string[] {
  if (text.length <= max) return [text]
  const parts: string[] = []
  let rest = text
  while (rest.length > max) {
    const window = rest.slice(0, max)
    let cut = Math.max(window.lastIndexOf('. '), window.lastIndexOf('! '), window.lastIndexOf('? '))
    if (cut < max / 3) cut = window.lastIndexOf(' ')
    if (cut < max / 3) cut = max - 1
    parts.push(rest.slice(0, cut + 1).trim())
    rest = rest.slice(cut + 1).trim()
  }
  if (rest) parts.push(rest)
  return parts
}

/**
 * Passages of about PASSAGE_TARGET_CHARS: paragraphs of one section joined, never across a heading, never longer
 * than PASSAGE_MAX_CHARS; each keeps its section heading (weighted highest in search) and its first page.
 */
export function toPassages(blocks: Block[]): Passage[] {
  const passages: Passage[] = []
  let current: Omit<Passage, 'position'> | null = null
  const push = () => {
    if (current?.text) passages.push({ position: passages.length + 1, ...current })
    current = null
  }
  for (const block of blocks) {
    if (block.isHeading) {
      push()
      continue
    }
    for (const piece of splitLong(block.text, PASSAGE_MAX_CHARS)) {
      const fits =
        current !== null &&
        current.heading === block.heading &&
        current.text.length + piece.length + 2 <= PASSAGE_MAX_CHARS &&
        current.text.length < PASSAGE_TARGET_CHARS
      if (current !== null && fits) current.text += `\n\n${piece}`
      else {
        push()
        current = { heading: block.heading, text: piece, page: block.page }
      }
    }
  }
  push()
  // a section that is only a heading (a title page) still becomes searchable
  if (passages.length === 0) {
    for (const block of blocks) {
      if (block.text)
        passages.push({ position: passages.length + 1, heading: block.heading, text: block.text, page: block.page })
    }
  }
  return passages
}
