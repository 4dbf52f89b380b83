import JSZip from 'jszip'
import { PDFDocument, StandardFonts } from 'pdf-lib'

/** A section of a generated document: a heading and its paragraphs. */
export interface Section {
  heading: string
  paragraphs: string[]
}

/** Wraps a paragraph into lines of at most `width` characters (pdf-lib draws one line at a time). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(/\s+/)) {
    if (line && line.length + word.length + 1 > width) {
      lines.push(line)
      line = word
    } else line = line ? `${line} ${word}` : word
  }
  if (line) lines.push(line)
  return lines
}

/** A real PDF with a text layer: headings in 20 pt bold, paragraphs in 11 pt, a new page when one is full. */
export async function makePdf(sections: Section[]): Promise<Buffer> {
  const pdf = await PDFDocument.create()
  const regular = await pdf.embedFont(StandardFonts.Helvetica)
  const bold = await pdf.embedFont(StandardFonts.HelveticaBold)
  let page = pdf.addPage([595, 842])
  let y = 790
  const line = (text: string, size: number, font = regular, gap = 4) => {
    if (y < 60) {
      page = pdf.addPage([595, 842])
      y = 790
    }
    page.drawText(text, { x: 50, y, size, font })
    y -= size + gap
  }
  for (const section of sections) {
    line(section.heading, 20, bold, 10)
    for (const paragraph of section.paragraphs) {
      for (const text of wrap(paragraph, 85)) line(text, 11)
      y -= 12
    }
  }
  return Buffer.from(await pdf.save())
}

/** A PDF whose only page carries no text (like a scan without a text layer). */
export async function makeTextlessPdf(): Promise<Buffer> {
  const pdf = await PDFDocument.create()
  const page = pdf.addPage([595, 842])
  page.drawRectangle({ x: 50, y: 50, width: 200, height: 100 })
  return Buffer.from(await pdf.save())
}

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

const XML_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
const OOXML = 'http://schemas.openxmlformats.org'
const relationships = (type: string, target: string) =>
  `${XML_HEAD}<Relationships xmlns="${OOXML}/package/2006/relationships">
<Relationship Id="rId1" Type="${OOXML}/officeDocument/2006/relationships/${type}" Target="${target}"/>
</Relationships>`

/** The parts of a DOCX besides its document: content types, relationships, the two styles it uses. */
const DOCX_PARTS = {
  '[Content_Types].xml': `${XML_HEAD}<Types xmlns="${OOXML}/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>
<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/>
</Types>`,
  '_rels/.rels': relationships('officeDocument', 'word/document.xml'),
  'word/_rels/document.xml.rels': relationships('styles', 'styles.xml'),
  'word/styles.xml': `${XML_HEAD}<w:styles xmlns:w="${OOXML}/wordprocessingml/2006/main">
<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:basedOn w:val="Normal"/></w:style>
</w:styles>`,
}

/** A real DOCX (Office Open XML): headings in the built-in "heading 1" style, paragraphs as Normal. */
export async function makeDocx(sections: Section[]): Promise<Buffer> {
  const zip = new JSZip()
  for (const [name, text] of Object.entries(DOCX_PARTS)) zip.file(name, text)
  const paragraph = (text: string, style?: string) =>
    `<w:p>${style ? `<w:pPr><w:pStyle w:val="${style}"/></w:pPr>` : ''}<w:r><w:t xml:space="preserve">${escapeXml(text)}</w:t></w:r></w:p>`
  const body = sections
    .map((s) => [paragraph(s.heading, 'Heading1'), ...s.paragraphs.map((p) => paragraph(p))].join(''))
    .join('')
  zip.file(
    'word/document.xml',
    `${XML_HEAD}<w:document xmlns:w="${OOXML}/wordprocessingml/2006/main"><w:body>${body}</w:body></w:document>`,
  )
  return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' })
}

/** A multipart/form-data body with one file field. */
export function multipartBody(field: string, filename: string, mime: string, data: Buffer) {
  const boundary = `----herold${Math.random().toString(16).slice(2)}`
  const payload = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\nContent-Type: ${mime}\r\n\r\n`,
    ),
    data,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ])
  return { payload, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } }
}
