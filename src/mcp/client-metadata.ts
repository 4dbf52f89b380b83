import { eq } from 'drizzle-orm'
import type { Db } from '../platform/db/client.ts'
import { createOutboundHttp, OutboundError, type OutboundHttp } from '../platform/outbound-http.ts'
import { oauthClients } from './mcp.tables.ts'
import { isAllowedRedirect, OAuthError } from './oauth.rules.ts'

/**
 * Client ID metadata documents (MCP authorization, 2025-11-25; draft-ietf-oauth-client-id-metadata-document): an
 * assistant that has not registered uses the https address of a JSON document describing it as its client_id. At
 * each authorization request the server fetches the document (5 s, at most 5 KB, no redirects, public addresses
 * only, through the outbound guard), checks that its client_id is exactly that address and its redirect_uris, and
 * keeps the client (name, redirect addresses) in oauth_clients under that address for the code exchange and the
 * consent page. Plain http is accepted only from 127.0.0.1 and only with
 * HEROLD_DEV_OAUTH_CLIENT_METADATA_HTTP_LOOPBACK (development and tests).
 */

export const CLIENT_METADATA_MAX_BYTES = 5 * 1024
export const CLIENT_METADATA_TIMEOUT_MS = 5_000

export interface ClientMetadataOptions {
  /** the dev/test setting: http://127.0.0.1:<port>/... documents accepted (and fetched from loopback) */
  httpLoopback: boolean
  /** HEROLD_ALLOW_PRIVATE_TARGETS: https documents on private addresses (closed networks) */
  allowPrivateTargets: boolean
}

/** Whether a client_id is a client ID metadata document's address (an https URL with a path), not a registered id. */
export function isClientMetadataUrl(clientId: string, options: Pick<ClientMetadataOptions, 'httpLoopback'>): boolean {
  let url: URL
  try {
    url = new URL(clientId)
  } catch {
    return false
  }
  const scheme =
    url.protocol === 'https:' || (options.httpLoopback && url.protocol === 'http:' && url.hostname === '127.0.0.1')
  return scheme && clientId.startsWith(`${url.protocol}//`) && url.pathname !== '/'
}

function refuse(description: string): OAuthError {
  return new OAuthError('invalid_client', `Client ID metadata document: ${description}`)
}

/** Checks the address's form beyond the scheme: no fragment, no credentials, no dot segments (the draft's rules). */
function checkAddress(clientId: string): void {
  const url = new URL(clientId)
  if (url.hash || clientId.includes('#')) throw refuse('the client_id must not have a fragment')
  if (url.username || url.password) throw refuse('the client_id must not carry credentials')
  if (/\/\.\.?(\/|$)/.test(clientId.slice(url.origin.length)))
    throw refuse('the client_id must not have . or .. segments')
  if (clientId.length > 2000) throw refuse('the client_id is longer than 2000 characters')
  if (url.href !== clientId) throw refuse(`the client_id is not in normal form (${url.href})`)
}

export function clientMetadataFetcher(options: ClientMetadataOptions) {
  const http: OutboundHttp = createOutboundHttp({
    allowPrivateTargets: options.allowPrivateTargets || options.httpLoopback,
    timeoutMs: CLIENT_METADATA_TIMEOUT_MS,
    // one byte beyond the limit shows that the document is too large
    maxResponseBytes: CLIENT_METADATA_MAX_BYTES + 1,
  })

  /** Fetches and checks the document, and keeps the client under its address; the oauth_clients row. */
  async function resolve(db: Db, clientId: string) {
    checkAddress(clientId)
    let body: Buffer
    try {
      const response = await http.send(clientId, { headers: { accept: 'application/json' } })
      if (response.status !== 200) throw refuse(`${clientId} answered ${response.status}`)
      body = response.body
    } catch (error) {
      if (error instanceof OutboundError) throw refuse(`${clientId} could not be fetched (${error.code})`)
      throw error
    }
    if (body.length > CLIENT_METADATA_MAX_BYTES) throw refuse(`larger than ${CLIENT_METADATA_MAX_BYTES} bytes`)
    let document: Record<string, unknown>
    try {
      document = JSON.parse(body.toString('utf8'))
    } catch {
      throw refuse('not JSON')
    }
    if (typeof document !== 'object' || document === null || Array.isArray(document)) throw refuse('not a JSON object')
    if (document.client_id !== clientId) throw refuse('its client_id is not the address it was fetched from')
    const redirectUris = document.redirect_uris
    if (
      !Array.isArray(redirectUris) ||
      redirectUris.length === 0 ||
      redirectUris.length > 10 ||
      !redirectUris.every((u) => typeof u === 'string' && u.length <= 2000 && isAllowedRedirect(u))
    ) {
      throw refuse('redirect_uris: 1 to 10 https, loopback http or private-scheme addresses without fragment')
    }
    const method = document.token_endpoint_auth_method ?? 'none'
    if (method !== 'none') throw refuse('only public clients (token_endpoint_auth_method none) with PKCE')
    if ('client_secret' in document || 'client_secret_expires_at' in document) {
      throw refuse('a public client has no client_secret')
    }
    const name =
      typeof document.client_name === 'string' && document.client_name.trim()
        ? document.client_name.trim().slice(0, 200)
        : new URL(clientId).host
    const values = { clientId, clientName: name, redirectUris: redirectUris as string[] }
    await db
      .insert(oauthClients)
      .values(values)
      .onConflictDoUpdate({
        target: oauthClients.clientId,
        set: { clientName: values.clientName, redirectUris: values.redirectUris },
      })
    const [row] = await db.select().from(oauthClients).where(eq(oauthClients.clientId, clientId))
    return row
  }

  return { resolve, close: () => http.close() }
}

export type ClientMetadataFetcher = ReturnType<typeof clientMetadataFetcher>
