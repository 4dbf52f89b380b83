// The baseline of bench/api.ts: a bare Fastify server answering a small JSON object, nothing else.
import Fastify from 'fastify'

const app = Fastify({ logger: false })
app.get('/', async () => ({ hello: 'world' }))
const address = await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' })
console.log(`Server listening at ${address}`)
process.on('SIGTERM', () => app.close().then(() => process.exit(0)))
