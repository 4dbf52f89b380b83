import { randomBytes } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { AppError } from './errors.ts'

// A JSON upload carries its file as one base64 string. Parsed as usual, a 105 MB body is held three times on the
// JavaScript heap at once (the body as a string, the parsed field, the field without its whitespace) before it is
// decoded: two at once exhaust the server's heap. This parser (installed in a route plugin of its own) reads the body
// as bytes, lifts the base64 field's value out of them, checks and decodes it to a Buffer (outside the heap), and
// parses the rest of the JSON, which is small, as usual; the field reads as a placeholder there, and the handler
// takes the decoded bytes with liftedBase64(request). Small bodies are parsed as usual.

/** Bodies below this are parsed the usual way. */
const LIFT_MIN_BYTES = 256 * 1024
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
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    try {
      done(
        null,
        parseLifting(request, body as Buffer, options, (text) => parseJson(request, text)),
      )
    } catch (error) {
      done(error as Error, undefined)
    }
  })
}

const WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d])

function parseLifting(
  request: FastifyRequest,
  body: Buffer,
  options: LiftOptions,
  parseJson: (text: string) => unknown,
): unknown {
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
    lifted.set(request, decode(body.subarray(start, end), options))
    return parsed
  }
  return parseJson(body.toString('utf8'))
}

/** The index of the closing quote of the JSON string starting at `start`, or -1. */
function stringEnd(body: Buffer, start: number): number {
  for (let i = start; i < body.length; i++) {
    if (body[i] === 0x5c /* \ */) i++
    else if (body[i] === 0x22) return i
  }
  return -1
}

/**
 * The base64 bytes of a JSON string's raw content (a `data:…;base64,` prefix, whitespace and the escapes \n, \r, \t
 * and \/ allowed), decoded; 400 when it is not base64.
 */
function decode(raw: Buffer, options: LiftOptions): Buffer {
  const invalid = () =>
    new AppError(400, 'bad_request', `${options.field} is not valid base64`, { key: options.invalidKey })
  let from = 0
  if (raw.subarray(0, 5).toString('latin1') === 'data:') {
    const comma = raw.indexOf(0x2c, 0)
    if (comma < 0 || comma > 200 || !raw.subarray(0, comma).toString('latin1').endsWith(';base64')) throw invalid()
    from = comma + 1
  }
  const out = Buffer.allocUnsafe(raw.length - from)
  let length = 0
  let padding = 0
  for (let i = from; i < raw.length; i++) {
    let c = raw[i]
    if (c === 0x5c) {
      const next = raw[++i]
      if (next === 0x2f) c = 0x2f
      else if (next === 0x6e || next === 0x72 || next === 0x74) continue
      else throw invalid()
    }
    if (WHITESPACE.has(c)) continue
    const alphabet =
      (c >= 0x41 && c <= 0x5a) ||
      (c >= 0x61 && c <= 0x7a) ||
      (c >= 0x30 && c <= 0x39) ||
      c === 0x2b ||
      c === 0x2f ||
      (options.urlSafe === true && (c === 0x2d || c === 0x5f))
    if (c === 0x3d) padding++
    else if (!alphabet || padding > 0) throw invalid()
    out[length++] = c
  }
  if (padding > 2 || length % 4 === 1) throw invalid()
  // a string made from bytes this large lives outside the JavaScript heap (an external string)
  return Buffer.from(out.subarray(0, length).toString('latin1'), 'base64')
}
