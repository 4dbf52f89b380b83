import assert from 'node:assert/strict'
import { test } from 'node:test'
import { PDFDocument } from 'pdf-lib'
import { makeDocx } from '../../../test/helpers/documents.ts'
import { docxBomb } from '../../../test/helpers/zip-bomb.ts'
import { AppError } from '../../platform/http/errors.ts'
import { extractDocument } from './knowledge.extract.ts'
import { extractDocumentOnThread } from './knowledge.extract-thread.ts'
import { checkZipLimits, MAX_PDF_PAGES } from './knowledge.limits.ts'

const refusal = (key: string | RegExp) => (error: unknown) => {
  assert.ok(error instanceof AppError, String(error))
  assert.equal(error.status, 400)
  if (typeof key === 'string') assert.equal(error.key, key)
  else assert.match(error.key, key)
  return true
}

test('a real DOCX passes the archive check; one whose part inflates 1,000 times is refused before it is inflated', async () => {
  checkZipLimits(await makeDocx([{ heading: 'Returns', paragraphs: ['Within 30 days.'] }]))
  const bomb = await docxBomb(200 * 1024 * 1024)
  assert.throws(() => checkZipLimits(bomb), refusal('document_too_complex'))
  await assert.rejects(extractDocumentOnThread(bomb, 'bomb.docx', ''), (error: AppError) => {
    assert.match(error.message, /word\/document\.xml inflates \d+ times/)
    assert.equal(error.details.limit, 'ratio')
    return true
  })
})

test('a DOCX whose headers lie about its size is read on the extraction thread: a 400, and this thread keeps running', async () => {
  // says 1 KB, inflates to 400 MB: passes the archive check, so only the thread's limits stop it
  const bomb = await docxBomb(400 * 1024 * 1024, 1024)
  checkZipLimits(bomb)
  let last = performance.now()
  let longestGap = 0
  const ticker = setInterval(() => {
    longestGap = Math.max(longestGap, performance.now() - last)
    last = performance.now()
  }, 50)
  try {
    await assert.rejects(extractDocumentOnThread(bomb, 'liar.docx', ''), refusal(/^document_(too_complex|unreadable)$/))
  } finally {
    clearInterval(ticker)
  }
  assert.ok(longestGap < 1000, `this thread's event loop kept running (longest gap ${Math.round(longestGap)} ms)`)
  // the thread is usable again afterwards
  const docx = await makeDocx([{ heading: 'Returns', paragraphs: ['Within 30 days.'] }])
  const extracted = await extractDocumentOnThread(docx, 'returns.docx', '')
  assert.ok(extracted.blocks.some((b) => b.text.includes('Within 30 days')))
})

test(`a PDF of more than ${MAX_PDF_PAGES} pages is refused with its page count`, async () => {
  const pdf = await PDFDocument.create()
  for (let i = 0; i <= MAX_PDF_PAGES; i++) pdf.addPage([100, 100])
  const bytes = Buffer.from(await pdf.save())
  await assert.rejects(extractDocument(bytes, 'long.pdf', ''), (error: AppError) => {
    assert.equal(error.key, 'document_too_many_pages')
    assert.deepEqual(error.details, { pages: MAX_PDF_PAGES + 1, max_pages: MAX_PDF_PAGES })
    return true
  })
  await assert.rejects(extractDocumentOnThread(bytes, 'long.pdf', ''), refusal('document_too_many_pages'))
})
