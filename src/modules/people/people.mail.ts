import type { Transporter } from 'nodemailer'
import type { PlatformDeps } from '../../platform/module.ts'
import type { ChannelsService } from '../channels/index.ts'

export interface PeopleMail {
  to: string
  subject: string
  text: string
}

/** The account's e-mail channel, the way out when the server has no SMTP settings of its own. */
export type PeopleMailChannels = Pick<ChannelsService, 'sendEmail'>

const transports = new Map<string, Transporter>()

/**
 * Sends an invitation or reset e-mail through the server's SMTP settings (HEROLD_SMTP_URL), else through the
 * account's connected e-mail channel. Returns false when neither can send (the caller tells the person).
 */
export async function sendPeopleMail(
  deps: Pick<PlatformDeps, 'config'>,
  channels: PeopleMailChannels,
  accountId: string | null,
  mail: PeopleMail,
): Promise<boolean> {
  const url = deps.config.smtpUrl
  if (url) {
    let transport = transports.get(url)
    if (!transport) {
      // nodemailer loads with the first e-mail sent this way
      const nodemailer = await import('nodemailer')
      transport = nodemailer.default.createTransport(url)
      transports.set(url, transport)
    }
    try {
      await transport.sendMail({ from: deps.config.mailFrom, ...mail })
      return true
    } catch {
      return false
    }
  }
  if (!accountId) return false
  try {
    await channels.sendEmail(accountId, mail)
    return true
  } catch {
    return false
  }
}

export function closePeopleMail(): void {
  for (const transport of transports.values()) transport.close()
  transports.clear()
}

type Language = 'de' | 'en'

export function invitationMail(
  language: Language,
  input: { accountName: string; link: string; role: string },
): Omit<PeopleMail, 'to'> {
  return language === 'de'
    ? {
        subject: `Einladung zu ${input.accountName}`,
        text: `Sie wurden als ${input.role} zu ${input.accountName} in Herold eingeladen.\n\nEinladung annehmen (7 Tage gültig):\n${input.link}\n`,
      }
    : {
        subject: `Invitation to ${input.accountName}`,
        text: `You were invited to ${input.accountName} on Herold as ${input.role}.\n\nAccept the invitation (valid for 7 days):\n${input.link}\n`,
      }
}

export function resetMail(language: Language, input: { link: string }): Omit<PeopleMail, 'to'> {
  return language === 'de'
    ? {
        subject: 'Passwort zurücksetzen',
        text: `Mit diesem Link setzen Sie Ihr Herold-Passwort zurück (1 Stunde gültig, einmal verwendbar):\n${input.link}\n\nHaben Sie das nicht angefordert, ignorieren Sie diese E-Mail.\n`,
      }
    : {
        subject: 'Reset your password',
        text: `Reset your Herold password with this link (valid for 1 hour, usable once):\n${input.link}\n\nIf you did not ask for this, ignore this e-mail.\n`,
      }
}
