import type { FastifyInstance } from 'fastify'

/**
 * GET /: the first address a newcomer opens. A small page naming the service with the ways in (the API reference,
 * the OpenAPI document, the health check) until the web app serves this address.
 */
export function homePage(serviceName: string) {
  const name = serviceName.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Herold</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#1b1b1b}a{color:#0b57d0}code{background:#f1f1f1;padding:0 .25rem}</style>
</head>
<body>
<main>
<h1>Herold</h1>
<p>Herold (${name}) is running: a multi-tenant customer-messaging and marketing backend. Integrations use its REST API
with an API key (<code>Authorization: Bearer hk_…</code>); the first start printed one.</p>
<ul>
<li><a href="/docs">API reference</a> (interactive)</li>
<li><a href="/v1/openapi.json">OpenAPI document</a> (<a href="/v1/openapi.yaml">YAML</a>)</li>
<li><a href="/healthz">Health check</a></li>
</ul>
</main>
</body>
</html>
`
  return async (app: FastifyInstance): Promise<void> => {
    app.get('/', { config: { public: true }, schema: { hide: true } }, async (_request, reply) =>
      reply
        .type('text/html; charset=utf-8')
        .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'")
        .send(html),
    )
  }
}
