import type { Transporter } from 'nodemailer'
import type { EmailProvider } from './channels.provider.ts'

/** e-mail `smtp`: nodemailer over the connection's SMTP URL (smtp://user:pass@host:port or smtps://…). */
export function smtpEmailProvider(options: { url: string; tlsRejectUnauthorized?: boolean }): EmailProvider {
  // nodemailer (650 KB of modules) loads with the first message, not with every server that could send one.
  let transport: Promise<Transporter> | undefined
  const transportOf = () => {
    transport ??= import('nodemailer').then((nodemailer) => nodemailer.default.createTransport(options.url))
    return transport
  }
  return {
    name: 'smtp',
    async send(message) {
      try {
        const info = await (await transportOf()).sendMail({
          from: message.from,
          to: message.to,
          subject: message.subject,
          text: message.text,
          html: message.html,
          messageId: message.messageId,
          headers: message.headers,
        })
        return { ok: true, providerMessageId: info.messageId }
      } catch (error) {
        const e = error as { responseCode?: number; code?: string; message?: string }
        const temporary = e.responseCode !== undefined ? e.responseCode < 500 : true
        return {
          ok: false,
          error: {
            kind: temporary ? 'retry_later' : 'failed',
            providerCode: String(e.responseCode ?? e.code ?? 'smtp_error'),
            message: e.message ?? 'SMTP send failed',
          },
        }
      }
    },
    async close() {
      if (transport) (await transport).close()
    },
  }
}
