import type { AddressInfo } from 'node:net'
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
export async function startSmtpSink(): Promise<SmtpSink> {
  const arrived: ArrivedMail[] = []
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
