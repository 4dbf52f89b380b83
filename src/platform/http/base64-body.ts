import { randomBytes } from 'node:crypto'
import { errorCodes, type FastifyInstance, type FastifyRequest } from 'fastify'
import { AppError } from './errors.ts'

// A JSON upload carries its file as one base64 string. Parsed as usual, a 105 MB body is held three times on the
// JavaScript heap at once (the body as a string, the parsed field, the field without its whitespace) before it is
// decoded: two at once exhaust the server's heap. This parser (installed in a route plugin of its own) reads the body
// as bytes, lifts the base64 field's value out of them, checks and decodes it to a Buffer (outside the heap), and
// parses the rest of the JSON, which is small, as usual; the field reads as a placeholder there, and the handler
// takes the decoded bytes with liftedBase64(request). Small bodies are parsed as usual.

/** Bodies below this are parsed the usual way. */
const LIFT_MIN_BYTES = 256 * 1024
/** Characters of base64 decoded at once (a multiple of 4). */
const DECODE_PIECE = 4 * 1024 * 1024
const lifted = new WeakMap<FastifyRequest, Buffer>()

/** The decoded bytes of the lifted field, when the body's field was lifted. */
export function liftedBase64(request: FastifyRequest): Buffer | undefined {
  return lifted.get(request)
}

export interface LiftOptions {
  field: string
  /** the 400's key when the value is not base64 */
  invalidKey: string
  /** also accept the URL-safe alphabet (- and _) */
  urlSafe?: boolean
}

const notJson = () => new AppError(400, 'bad_request', 'The body is not valid JSON')

/** Replaces the plugin's JSON parser with the lifting one. */
export function installBase64JsonParser(app: FastifyInstance, options: LiftOptions): void {
  // Fastify's own JSON parsing (it refuses __proto__ and constructor.prototype keys), synchronous
  const parser = app.getDefaultJsonParser('error', 'error')
  const parseJson = (request: FastifyRequest, text: string): unknown => {
    let result: unknown
    parser(request, text, (error, value) => {
      if (error) throw notJson()
      result = value
    })
    return result
  }
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', (request, payload, done) => {
    const limit = request.routeOptions.bodyLimit ?? app.initialConfig.bodyLimit ?? 1024 * 1024
    readBody(request, payload, limit)
      .then((body) => parseLifting(request, body, options, (text) => parseJson(request, text)))
      .then(
        (value) => done(null, value),
        (error: Error) => done(error, undefined),
      )
  })
}

/**
 * The body's bytes, as Fastify reads them (the route's body limit, the declared length checked), but copied into one
 * buffer of the declared length piece by piece as they arrive: Fastify joins the pieces at the end, and for a 105 MB
 * upload that one copy into fresh memory held the event loop for about 400 ms.
 */
function readBody(request: FastifyRequest, payload: NodeJS.ReadableStream, limit: number): Promise<Buffer> {
  const declared = Number(request.headers['content-length'])
  if (declared > limit) return Promise.reject(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE())
  const known = Number.isInteger(declared) && declared >= 0
  const whole = known ? Buffer.allocUnsafe(declared) : null
  const pieces: Buffer[] = []
  let received = 0
  return new Promise((resolve, reject) => {
    const stop = () => {
      payload.removeListener('data', onData)
      payload.removeListener('end', onEnd)
      payload.removeListener('error', onEnd)
    }
    function onData(data: Buffer | string) {
      const chunk = typeof data === 'string' ? Buffer.from(data) : data
      received += chunk.length
      if (received > limit) {
        stop()
        return reject(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE())
      }
      if (whole) {
        if (received > whole.length) {
          stop()
          return reject(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH())
        }
        chunk.copy(whole, received - chunk.length)
      } else pieces.push(chunk)
    }
    function onEnd(error?: Error & { statusCode?: number }) {
      stop()
      if (error) {
        if (!(typeof error.statusCode === 'number' && error.statusCode >= 400)) error.statusCode = 400
        return reject(error)
      }
      if (whole && received !== whole.length) return reject(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH())
      resolve(whole ?? Buffer.concat(pieces, received))
    }
    payload.on('data', onData)
    payload.on('end', onEnd)
    payload.on('error', onEnd)
    payload.resume()
  })
}

const WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d])

async function parseLifting(
  request: FastifyRequest,
  body: Buffer,
  options: LiftOptions,
  parseJson: (text: string) => unknown,
): Promise<unknown> {
  if (body.length < LIFT_MIN_BYTES) {
    const text = body.toString('utf8')
    return text.trim() === '' ? undefined : parseJson(text)
  }
  const key = Buffer.from(JSON.stringify(options.field))
  for (let at = body.indexOf(key); at >= 0; at = body.indexOf(key, at + 1)) {
    let i = at + key.length
    while (WHITESPACE.has(body[i])) i++
    if (body[i] !== 0x3a /* : */) continue
    i++
    while (WHITESPACE.has(body[i])) i++
    if (body[i] !== 0x22 /* " */) continue
    const start = i + 1
    const end = stringEnd(body, start)
    if (end < 0) throw notJson()
    const placeholder = `lifted:${randomBytes(12).toString('hex')}`
    const rest = Buffer.concat([body.subarray(0, i), Buffer.from(JSON.stringify(placeholder)), body.subarray(end + 1)])
    const parsed = parseJson(rest.toString('utf8')) as Record<string, unknown> | null
    // the occurrence was the top-level field (not a nested one or text inside another string)
    if (parsed === null || typeof parsed !== 'object' || parsed[options.field] !== placeholder) continue
    lifted.set(request, await decode(body.subarray(start, end), options))
    return parsed
  }
  return parseJson(body.toString('utf8'))
}

/** The index of the closing quote of the JSON string starting at `start`, or -1. */
function stringEnd(body: Buffer, start: number): number {
  for (let i = body.indexOf(0x22, start); i >= 0; i = body.indexOf(0x22, i + 1)) {
    // escaped when an odd number of backslashes precede it
    let backslashes = 0
    while (body[i - 1 - backslashes] === 0x5c) backslashes++
    if (backslashes % 2 === 0) return i
  }
  return -1
}

/**
 * The base64 bytes of a JSON string's raw content (a `data:…;base64,` prefix, whitespace and the escapes \n, \r, \t
 * and \/ allowed), decoded; 400 when it is not base64. The usual value (no escapes, no spaces) is decoded and checked
 * by native code (encoded again and compared); any other is checked byte by byte, yielding the event loop on the way.
 */
async function decode(raw: Buffer, options: LiftOptions): Promise<Buffer> {
  const invalid = () =>
    new AppError(400, 'bad_request', `${options.field} is not valid base64`, { key: options.invalidKey })
  let from = 0
  if (raw.subarray(0, 5).toString('latin1') === 'data:') {
    const comma = raw.indexOf(0x2c, 0)
    if (comma < 0 || comma > 200 || !raw.subarray(0, comma).toString('latin1').endsWith(';base64')) throw invalid()
    from = comma + 1
  }
  let value = raw.subarray(from)
  if (value.includes(0x5c) || value.includes(0x20)) value = await compact(value, invalid)
  let length = value.length
  while (length > 0 && value[length - 1] === 0x3d) length--
  if (value.length % 4 === 1 || value.length - length > 2) throw invalid()
  // decoded a piece at a time, each checked by encoding it again (the decoder skips what is not base64), yielding
  // the event loop between pieces: a 100 MB file never holds it for long
  const out = Buffer.allocUnsafe(Math.ceil(length / 4) * 3)
  let written = 0
  for (let at = 0; at < length; at += DECODE_PIECE) {
    if (at > 0) await new Promise((resolve) => setImmediate(resolve))
    const text = value.toString('latin1', at, Math.min(length, at + DECODE_PIECE))
    const piece = Buffer.from(text, 'base64')
    const again = piece.toString('base64').replace(/=+$/, '')
    const expected = options.urlSafe === true ? text.replaceAll('-', '+').replaceAll('_', '/') : text
    if (again !== expected) throw invalid()
    written += piece.copy(out, written)
  }
  return out.subarray(0, written)
}

/** The value without whitespace and with \/ as /; 400 for any other escape or a stray byte. */
async function compact(raw: Buffer, invalid: () => AppError): Promise<Buffer> {
  const out = Buffer.allocUnsafe(raw.length)
  let length = 0
  for (let i = 0; i < raw.length; i++) {
    if (i % (4 * 1024 * 1024) === 0 && i > 0) await new Promise((resolve) => setImmediate(resolve))
    let c = raw[i]
    if (c === 0x5c) {
      const next = raw[++i]
      if (next === 0x2f) c = 0x2f
      else if (next === 0x6e || next === 0x72 || next === 0x74) continue
      else throw invalid()
    }
    if (WHITESPACE.has(c)) continue
    out[length++] = c
  }
  return out.subarray(0, length)
}
