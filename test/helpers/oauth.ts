import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import type { LightMyRequestResponse } from 'fastify'
import { approveAuthorization, checkAuthorizationRequest, oauthUrls } from '../../src/mcp/oauth.ts'
import type { Scope } from '../../src/platform/auth/scopes.ts'
import type { Harness } from './harness.ts'

// An assistant's way through OAuth as the tests take it: registered, approved on the consent page, the code exchanged.

export const REDIRECT = 'http://127.0.0.1:33418/callback'

/** POST /oauth/token: an authorization code exchanged for the access token (PKCE). */
export function exchangeCode(
  harness: Harness,
  grant: { code: string; clientId: string; verifier: string; redirect?: string },
): Promise<LightMyRequestResponse> {
  return harness.app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'authorization_code',
      code: grant.code,
      redirect_uri: grant.redirect ?? REDIRECT,
      client_id: grant.clientId,
      code_verifier: grant.verifier,
      resource: oauthUrls(harness.config.publicUrl).resource,
    }).toString(),
  })
}

/** The access token an assistant gets when this member approves these scopes (the consent page's approval). */
export async function approvedAssistantToken(
  harness: Harness,
  approval: { accountId: string; userId: string; scopes: readonly Scope[]; clientName: string; redirect?: string },
): Promise<string> {
  const redirect = approval.redirect ?? REDIRECT
  const urls = oauthUrls(harness.config.publicUrl)
  const registered = await harness.app.inject({
    method: 'POST',
    url: '/oauth/register',
    payload: { client_name: approval.clientName, redirect_uris: [redirect] },
  })
  const clientId = registered.json().client_id as string
  const verifier = randomBytes(32).toString('base64url')
  const request = await checkAuthorizationRequest(harness.database.orm, urls, {
    client_id: clientId,
    redirect_uri: redirect,
    response_type: 'code',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    resource: urls.resource,
    scope: approval.scopes.join(' '),
  })
  const { accountId, userId } = approval
  const { redirectTo } = await approveAuthorization(harness.database.orm, harness.clock, urls, {
    ...request,
    accountId,
    userId,
  })
  const code = new URL(redirectTo).searchParams.get('code') as string
  const exchanged = await exchangeCode(harness, { code, clientId, verifier, redirect })
  assert.equal(exchanged.statusCode, 200, exchanged.body)
  return exchanged.json().access_token
}
