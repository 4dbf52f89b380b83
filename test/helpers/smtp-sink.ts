import type { AddressInfo } from 'node:net'
import { after, before } from 'node:test'
import { SMTPServer } from 'smtp-server'

export interface ArrivedMail {
  from: string
  to: string[]
  raw: Buffer
}

export interface SmtpSink {
  port: number
  /** every mail received, in order of arrival */
  arrived: ArrivedMail[]
  close(): Promise<void>
}

/** A real SMTP server on loopback (no TLS, no auth) that keeps what arrives. */
export async function startSmtpSink(arrived: ArrivedMail[] = []): Promise<SmtpSink> {
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        arrived.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks),
        })
        callback()
      })
    },
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.server.address() as AddressInfo).port,
    arrived,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/**
 * A test file's SMTP sink: started before its tests, closed after them (register it after the harness, which closes
 * the channels' connections to it first). `arrived` is every mail received; `port` once started.
 */
export function smtpSinkPerFile(): { arrived: ArrivedMail[]; readonly port: number } {
  const arrived: ArrivedMail[] = []
  let sink: SmtpSink | undefined
  before(async () => {
    sink = await startSmtpSink(arrived)
  })
  after(() => sink?.close())
  return {
    arrived,
    get port() {
      return sink!.port
    },
  }
}

/** The e-mail channel's settings that send through the sink on this port. */
export const smtpChannel = (port: number, provider: 'smtp' | 'sandbox' = 'smtp') => ({
  channel: 'email' as const,
  provider,
  address: 'shop@example.com',
  smtpUrl: `smtp://127.0.0.1:${port}`,
})
