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

/** A valid RGB PNG of width × height. */
export function png(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr.set([8, 2, 0, 0, 0], 8)
  const rows = Buffer.alloc((width * 3 + 1) * height, 0x7f)
  for (let y = 0; y < height; y++) rows[y * (width * 3 + 1)] = 0
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(rows)),
    pngChunk('IEND', Buffer.alloc(0)),
  ])
}

/** The start of a JFIF JPEG (what a type check by magic numbers reads), padded. */
export function jpegHead(): Buffer {
  return Buffer.concat([Buffer.from('ffd8ffe000104a46494600010100000100010000', 'hex'), Buffer.alloc(64)])
}

/**
 * Script that, run on Herold's origin by a signed-in owner's browser, marks `window.__xss` (and its parent's and
 * opener's) with `tag`, reads the session's CSRF token and creates an API key named `xss <tag>`: what the stored
 * XSS of issue 51 did.
 */
export function attackScript(tag: string): string {
  return `(function(){var t=${JSON.stringify(tag)};
try{window.__xss=t}catch(e){}
try{parent.__xss=t}catch(e){}
try{opener&&(opener.__xss=t)}catch(e){}
fetch('/app/session',{credentials:'include'}).then(function(r){return r.json()}).then(function(s){
return fetch('/app/keys',{method:'POST',credentials:'include',headers:{'content-type':'application/json','x-csrf-token':s.csrf_token},
body:JSON.stringify({name:'xss '+t,scopes:['contacts:read']})})}).catch(function(){});})();`
}

/** Hostile files by the type they claim: each runs attackScript(tag) where a browser would run it. */
export function hostileFiles(tag: string): Array<{ name: string; mime: string; data: Buffer }> {
  const script = attackScript(tag)
  return [
    { name: 'html', mime: 'text/html', data: Buffer.from(`<!doctype html><p>Rechnung</p><script>${script}</script>`) },
    {
      name: 'svg',
      mime: 'image/svg+xml',
      data: Buffer.from(
        `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>${script}</script><rect width="10" height="10"/></svg>`,
      ),
    },
    {
      name: 'xml',
      mime: 'text/xml',
      data: Buffer.from(
        `<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body><script>${script.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</script></body></html>`,
      ),
    },
    {
      name: 'xhtml',
      mime: 'application/xhtml+xml',
      data: Buffer.from(
        `<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body><script>${script.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</script></body></html>`,
      ),
    },
    { name: 'text', mime: 'text/plain', data: Buffer.from(`<html><script>${script}</script></html>`) },
    { name: 'js', mime: 'text/javascript', data: Buffer.from(script) },
    { name: 'unknown', mime: 'application/x-herold-unknown', data: Buffer.from(`<script>${script}</script>`) },
    { name: 'png-claim', mime: 'image/png', data: Buffer.from(`<html><script>${script}</script></html>`) },
  ]
}
