import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { crc32, deflateSync } from 'node:zlib'

// Files a test sends as media: real images, and hostile ones that run script wherever a browser lets them.

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4)
  length.writeUInt32BE(data.length)
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data])
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(body))
  return Buffer.concat([length, body, crc])
}

/** A valid RGB PNG of width × height; `padding` bytes of an ancillary chunk make it as large as a test needs. */
export function png(width: number, height: number, padding = 0): Buffer {
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr.set([8, 2, 0, 0, 0], 8)
  const rows = Buffer.alloc((width * 3 + 1) * height, 0x7f)
  for (let y = 0; y < height; y++) rows[y * (width * 3 + 1)] = 0
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    ...(padding > 0 ? [pngChunk('teXt', Buffer.alloc(padding, 0x41))] : []),
    pngChunk('IDAT', deflateSync(rows)),
    pngChunk('IEND', Buffer.alloc(0)),
  ])
}

/** The start of a JFIF JPEG (what a type check by magic numbers reads), padded. */
export function jpegHead(): Buffer {
  return Buffer.concat([Buffer.from('ffd8ffe000104a46494600010100000100010000', 'hex'), Buffer.alloc(64)])
}

/**
 * Script that, run on Herold's origin by a signed-in owner's browser, adds `tag` to `window.__xss` (and to its
 * parent's and opener's), reads the session's CSRF token and creates an API key named `xss <tag>`: what the stored
 * XSS of issue 51 did.
 */
export function attackScript(tag: string): string {
  return `(function(){var t=${JSON.stringify(tag)};
function mark(w){try{(w.__xss=w.__xss||[]).push(t)}catch(e){}}
mark(window);if(parent!==window)mark(parent);if(opener)mark(opener);
fetch('/app/session',{credentials:'include'}).then(function(r){return r.json()}).then(function(s){
return fetch('/app/keys',{method:'POST',credentials:'include',headers:{'content-type':'application/json','x-csrf-token':s.csrf_token},
body:JSON.stringify({name:'xss '+t,scopes:['contacts:read']})})}).catch(function(){});})();`
}

const xml = (script: string) =>
  `<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body><script>${script.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</script></body></html>`

/** How each hostile type carries the script. */
const HOSTILE: Array<{ name: string; mime: string; wrap: (script: string) => string }> = [
  { name: 'html', mime: 'text/html', wrap: (s) => `<!doctype html><p>Rechnung</p><script>${s}</script>` },
  {
    name: 'svg',
    mime: 'image/svg+xml',
    wrap: (s) =>
      `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script><![CDATA[${s}]]></script></svg>`,
  },
  { name: 'xml', mime: 'text/xml', wrap: xml },
  { name: 'xhtml', mime: 'application/xhtml+xml', wrap: xml },
  { name: 'text', mime: 'text/plain', wrap: (s) => `<html><script>${s}</script></html>` },
  { name: 'js', mime: 'text/javascript', wrap: (s) => s },
  { name: 'unknown', mime: 'application/x-herold-unknown', wrap: (s) => `<script>${s}</script>` },
  { name: 'png-claim', mime: 'image/png', wrap: (s) => `<html><script>${s}</script></html>` },
]

/**
 * Hostile files by the type they claim (html, svg, xml, xhtml, text, js, unknown, and HTML claiming to be a PNG):
 * each runs attackScript(`<tag> <name>`) wherever a browser would run it.
 */
export function hostileFiles(tag: string): Array<{ name: string; mime: string; data: Buffer }> {
  return HOSTILE.map(({ name, mime, wrap }) => ({
    name,
    mime,
    data: Buffer.from(wrap(attackScript(`${tag} ${name}`))),
  }))
}

/** A file a loopback file server answers: its content type and body (a function to change it between requests). */
export type ServedFile = { type: string; body: Buffer | string | (() => Buffer | string) }

export interface FileServer {
  /** `http://127.0.0.1:<port>`; a path not in the server's files answers 404. */
  base: string
  close(): Promise<void>
}

/** An HTTP server on a loopback port that answers the given paths with their files and anything else with 404. */
export async function startFileServer(files: Record<string, ServedFile>): Promise<FileServer> {
  const server = createServer((request, response) => {
    const file = Object.hasOwn(files, request.url ?? '') ? files[request.url ?? ''] : undefined
    if (!file) return void response.writeHead(404).end()
    const body = typeof file.body === 'function' ? file.body() : file.body
    response.writeHead(200, { 'content-type': file.type }).end(body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve()))),
  }
}
