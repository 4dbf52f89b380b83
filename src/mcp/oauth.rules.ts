// What the authorization server (oauth.ts) and the client-metadata fetcher (client-metadata.ts) both hold to.

/** An OAuth error answer: `error` as RFC 6749 names it, the description for people. */
export class OAuthError extends Error {
  readonly error: string
  readonly status: number
  constructor(error: string, description: string, status = 400) {
    super(description)
    this.error = error
    this.status = status
  }
}

export function isAllowedRedirect(uri: string): boolean {
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    return false
  }
  if (url.hash) return false
  if (url.protocol === 'https:') return true
  // native and CLI clients listen on loopback (RFC 8252); a custom scheme for apps
  if (url.protocol === 'http:') return ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname)
  return /^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/.test(url.protocol)
}
