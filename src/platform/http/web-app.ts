import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance } from 'fastify'

/** Where `npm install` builds the web app (scripts/build-web.ts). */
export const WEB_DIST = path.resolve(import.meta.dirname, '../../../web/dist')

/** The pages of the single-page app; each answers index.html and the app's router draws the page. */
export const APP_PAGES = [
  '/',
  '/sign-in',
  '/setup/:token',
  '/invitations/:token',
  '/reset',
  '/reset/:token',
  '/keys',
  '/team',
  '/contacts',
  '/contacts/:id',
  '/account',
  '/inbox',
  '/inbox/:id',
  '/templates',
  '/templates/:id',
  '/webhooks',
  '/settings',
  '/newsletters',
  '/newsletters/:id',
  '/followups',
  '/followups/:id',
  '/automations',
  '/automations/:id',
  '/media',
  '/knowledge',
  '/consent',
]

/**
 * Only the app's own files: no inline script or style, no other origin, no framing; the API it calls is the same
 * origin.
 */
export const APP_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

export function webAppBuilt(dist = WEB_DIST): boolean {
  return existsSync(path.join(dist, 'index.html'))
}

/**
 * Serves the built web app: its pages (index.html, never cached, with a strict CSP) and its hashed assets under
 * /assets/ (cached for a year: a new build has new names).
 */
export function webApp(dist = WEB_DIST) {
  const index = readFileSync(path.join(dist, 'index.html'), 'utf8')
  return async (app: FastifyInstance): Promise<void> => {
    await app.register(fastifyStatic, {
      root: path.join(dist, 'assets'),
      prefix: '/assets/',
      decorateReply: false,
      index: false,
      cacheControl: false,
      setHeaders(response) {
        response.setHeader('cache-control', 'public, max-age=31536000, immutable')
        response.setHeader('x-content-type-options', 'nosniff')
      },
    })
    for (const url of APP_PAGES) {
      app.get(url, { config: { public: true }, schema: { hide: true } }, async (_request, reply) =>
        reply
          .type('text/html; charset=utf-8')
          .header('cache-control', 'no-cache')
          .header('content-security-policy', APP_CSP)
          .header('x-content-type-options', 'nosniff')
          .header('referrer-policy', 'same-origin')
          .send(index),
      )
    }
  }
}
