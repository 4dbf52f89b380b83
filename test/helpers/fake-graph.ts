import http, { type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after } from 'node:test'
import type { Harness } from './harness.ts'
import { type FileHarnessOptions, harnessPerFile } from './test-file.ts'

/** One request to the fake Graph API, read whole, with a way to answer it. */
export interface GraphCall {
  req: IncomingMessage
  method: string
  url: URL
  raw: string
  /** the parsed JSON body, null when empty */
  body: Record<string, unknown> | null
  /** answers JSON, or a Buffer with the given content type */
  send(status: number, body: unknown, type?: string): void
}

export interface FakeGraph {
  /** the Graph base address with its version, for `whatsappGraphUrl` */
  url: string
  /** the same server's address without the version, for other paths it answers (a webhook step's receiver) */
  origin: string
  close(): Promise<void>
}

/**
 * A fake WhatsApp Graph API on loopback: each test file decides the answers in `handle`; this part reads the body,
 * parses the address and listens.
 */
export async function startFakeGraph(handle: (call: GraphCall) => void): Promise<FakeGraph> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8')
      handle({
        req,
        method: req.method ?? '',
        url: new URL(req.url ?? '/', 'http://graph.test'),
        raw,
        body: raw ? JSON.parse(raw) : null,
        send(status, body, type = 'application/json') {
          res.writeHead(status, { 'content-type': type })
          res.end(Buffer.isBuffer(body) ? body : JSON.stringify(body))
        },
      })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url: `${origin}/v21.0`,
    origin,
    async close() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

/**
 * A test file's fake Graph (started by `start`) and a harness with workers whose WhatsApp Cloud calls go to it:
 * the Graph starts first and closes last; `use` receives the harness once created.
 */
export function graphHarnessPerFile(
  start: () => Promise<FakeGraph>,
  use: (harness: Harness) => void,
  options: Pick<FileHarnessOptions, 'drainOnly'> = {},
): void {
  let graph: FakeGraph | undefined
  harnessPerFile(async () => {
    graph = await start()
    return { config: { allowPrivateTargets: true, whatsappGraphUrl: graph.url }, workers: true, ...options }
  }, use)
  after(() => graph?.close())
}
