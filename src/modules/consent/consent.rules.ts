import { createHash, randomBytes } from 'node:crypto'

/** Limits of the consent settings. */
export const SETTINGS_LIMITS = { keywords: 20, keyword: 50, stopConfirmation: 1000, landingConsentText: 2000 } as const

export const DEFAULT_START_KEYWORDS: readonly string[] = ['START', 'Anmelden']
export const DEFAULT_STOP_KEYWORDS: readonly string[] = ['STOP', 'Abmelden']

const primary = (language: string) => language.split(/[_-]/)[0].toLowerCase()

const STOP_CONFIRMATION: Record<string, string> = {
  de: 'Sie haben sich abgemeldet und erhalten von uns keine Nachrichten mehr. Mit START melden Sie sich wieder an.',
  en: 'You have unsubscribed and will receive no more messages from us. Send START to subscribe again.',
}

const LANDING_CONSENT: Record<string, string> = {
  de: 'Ja, ich möchte Nachrichten per WhatsApp und E-Mail erhalten. Ich bestätige meine Anmeldung über den Link bzw. die Nachricht, die ich danach bekomme, und kann mich jederzeit wieder abmelden.',
  en: 'Yes, I want to receive messages by WhatsApp and e-mail. I confirm my sign-up with the link or message I receive next, and I can unsubscribe at any time.',
}

export function defaultStopConfirmation(language: string): string {
  return STOP_CONFIRMATION[primary(language)] ?? STOP_CONFIRMATION.en
}

export function defaultLandingConsentText(language: string): string {
  return LANDING_CONSENT[primary(language)] ?? LANDING_CONSENT.en
}

/** How a keyword and a message are compared: trimmed, Unicode-normalized, case-insensitive. */
export function keywordForm(text: string): string {
  return text.normalize('NFC').trim().toLocaleLowerCase('und')
}

/** The keyword the whole message is (trimmed, case-insensitive), or null; a keyword inside a sentence is none. */
export function matchKeyword(message: string, keywords: readonly string[]): string | null {
  const form = keywordForm(message)
  if (form === '') return null
  return keywords.find((k) => keywordForm(k) === form) ?? null
}

/**
 * What an inbound chat message means for consent: a stop keyword wins over a start keyword (settings forbid
 * overlap, this is the safe side); the confirm button counts only as a button message with the exact text.
 */
export function inboundIntent(
  message: { type: string; text: string },
  settings: { startKeywords: readonly string[]; stopKeywords: readonly string[] },
): { kind: 'stop'; keyword: string } | { kind: 'start'; keyword: string } | { kind: 'button'; text: string } | null {
  if (message.type === 'button') return { kind: 'button', text: message.text }
  if (message.type !== 'text') return null
  const stop = matchKeyword(message.text, settings.stopKeywords)
  if (stop) return { kind: 'stop', keyword: stop }
  const start = matchKeyword(message.text, settings.startKeywords)
  if (start) return { kind: 'start', keyword: start }
  return null
}

/** Cleans a keyword list: trimmed, empty ones dropped, duplicates (in keyword form) removed. */
export function cleanKeywords(keywords: readonly string[]): string[] {
  const seen = new Set<string>()
  const out: string[] = []
  for (const raw of keywords) {
    const keyword = raw.trim()
    const form = keywordForm(keyword)
    if (form === '' || seen.has(form)) continue
    seen.add(form)
    out.push(keyword)
  }
  return out
}

/** Keywords that are in both lists (in keyword form). */
export function overlappingKeywords(start: readonly string[], stop: readonly string[]): string[] {
  const stopForms = new Set(stop.map(keywordForm))
  return start.filter((k) => stopForms.has(keywordForm(k)))
}

/** Everything a page shows is escaped: text and attribute values alike. */
export function escapeHtml(value: string): string {
  return value
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;')
}

/** A random link token (192 bits) and the hash that is stored in its place. */
export function newLinkToken(): { token: string; hash: string } {
  const token = randomBytes(24).toString('base64url')
  return { token, hash: hashToken(token) }
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex')
}

/** Link tokens are base64url; anything else is refused before the database is asked. */
export function looksLikeToken(token: string): boolean {
  return /^[A-Za-z0-9_.-]{16,512}$/.test(token)
}

/**
 * A marketing e-mail with its unsubscribe link: a footer line in the text (and the HTML, when there is one) and
 * the RFC 8058 one-click headers.
 */
export function withUnsubscribe(
  message: { subject: string; text: string; html?: string },
  unsubscribeUrl: string,
  language: string,
): { subject: string; text: string; html?: string; headers: Record<string, string> } {
  const label = primary(language) === 'de' ? 'Abmelden' : 'Unsubscribe'
  const text = `${message.text.replace(/\s+$/, '')}\n\n--\n${label}: ${unsubscribeUrl}\n`
  const footer = `<p style="font-size:12px;color:#666"><a href="${escapeHtml(unsubscribeUrl)}">${label}</a></p>`
  const html =
    message.html === undefined
      ? undefined
      : /<\/body>/i.test(message.html)
        ? message.html.replace(/<\/body>/i, `${footer}</body>`)
        : `${message.html}${footer}`
  return {
    subject: message.subject,
    text,
    ...(html === undefined ? {} : { html }),
    headers: { 'List-Unsubscribe': `<${unsubscribeUrl}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
  }
}

const OPTIN_MAIL: Record<string, { subject: string; text: (account: string, link: string) => string }> = {
  de: {
    subject: 'Bitte bestätigen Sie Ihre Anmeldung',
    text: (account, link) =>
      `Hallo,\n\nSie haben sich bei ${account} angemeldet. Bitte bestätigen Sie Ihre E-Mail-Adresse über diesen Link:\n\n${link}\n\nWenn Sie sich nicht angemeldet haben, ignorieren Sie diese E-Mail einfach; Sie erhalten dann keine weiteren Nachrichten.\n`,
  },
  en: {
    subject: 'Please confirm your sign-up',
    text: (account, link) =>
      `Hello,\n\nYou signed up with ${account}. Please confirm your e-mail address with this link:\n\n${link}\n\nIf you did not sign up, simply ignore this e-mail; you will receive nothing further.\n`,
  },
}

export function optinMail(language: string, accountName: string, link: string): { subject: string; text: string } {
  const texts = OPTIN_MAIL[primary(language)] ?? OPTIN_MAIL.en
  return { subject: texts.subject, text: texts.text(accountName, link) }
}
