/** Link tracking of POST /messages rule 7: pure, so the rewrite is property-tested beside it. */

export interface LinkTrackingOptions {
  /** utm_source */
  serviceName: string
  /** utm_medium: the channel's name */
  medium: string
  /** HEROLD_PUBLIC_URL: short links live under it, and addresses on its host stay as they are */
  publicUrl: string
  /** the longest text allowed; a text the rewrite would make longer stays unchanged */
  maxLength: number
  /** a fresh short-link id (random in production) */
  newId(): string
}

export interface TrackedLink {
  id: string
  /** the full address the short link redirects to, UTM parameters added */
  url: string
}

const ADDRESS = /https?:\/\/[^\s<>"'`]+/gi
/** closing punctuation a sentence puts after an address, not part of it */
const TRAILING = /[.,;:!?)\]}]+$/
const SIGNED = new Set(['signature', 'sig', 'token', 'expires', 'x-amz-signature', 'x-amz-expires', 'x-amz-credential'])

export const shortLinkPath = (id: string) => `/public/t/c/${id}`

/** The full address to redirect to, or null when the address stays as it is. */
export function trackedAddress(address: string, options: Omit<LinkTrackingOptions, 'maxLength' | 'newId'>) {
  let url: URL
  try {
    url = new URL(address)
  } catch {
    return null
  }
  if (url.host === new URL(options.publicUrl).host) return null
  const names = [...url.searchParams.keys()].map((name) => name.toLowerCase())
  if (names.includes('utm_source') || names.some((name) => SIGNED.has(name))) return null
  url.searchParams.set('utm_source', options.serviceName)
  url.searchParams.set('utm_medium', options.medium)
  url.searchParams.set('utm_campaign', 'api')
  return url.toString()
}

/**
 * Replaces every trackable http(s) address with a short link; the text between addresses is never touched.
 * Our own short links are left alone, so a second run changes nothing.
 */
export function trackLinks(text: string, options: LinkTrackingOptions): { text: string; links: TrackedLink[] } {
  const links: TrackedLink[] = []
  const rewritten = text.replace(ADDRESS, (match) => {
    const address = match.replace(TRAILING, '')
    const trailing = match.slice(address.length)
    const url = trackedAddress(address, options)
    if (url === null) return match
    const id = options.newId()
    links.push({ id, url })
    return `${options.publicUrl}${shortLinkPath(id)}${trailing}`
  })
  if (rewritten.length > options.maxLength) return { text, links: [] }
  return { text: rewritten, links }
}
