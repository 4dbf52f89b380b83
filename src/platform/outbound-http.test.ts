import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import fc from 'fast-check'
import { createOutboundHttp, isPublicAddress, type OutboundError } from './outbound-http.ts'

let server: http.Server
let base: string
const hits: string[] = []

before(async () => {
  server = http.createServer((req, res) => {
    hits.push(req.url ?? '')
    if (req.url === '/redirect') return res.writeHead(302, { location: '/target' }).end()
    if (req.url === '/hang') return // never answers
    if (req.url === '/big') {
      res.writeHead(200, { 'content-type': 'text/plain' })
      const chunk = Buffer.alloc(64 * 1024, 'x')
      let sent = 0
      const pump = () => {
        while (sent < 16 && res.write(chunk)) sent++
        if (sent < 16) res.once('drain', pump)
        else res.end()
      }
      return pump()
    }
    res.writeHead(204).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
after(() => {
  server.closeAllConnections()
  server.close()
})

const v4 = (a: number, b: number, c: number, d: number) => `${a}.${b}.${c}.${d}`
const octet = fc.integer({ min: 0, max: 255 })
const privateV4 = fc.oneof(
  fc.tuple(octet, octet, octet).map(([b, c, d]) => v4(10, b, c, d)),
  fc.tuple(octet, octet, octet).map(([b, c, d]) => v4(127, b, c, d)),
  fc.tuple(octet, octet).map(([c, d]) => v4(169, 254, c, d)),
  fc.tuple(fc.integer({ min: 16, max: 31 }), octet, octet).map(([b, c, d]) => v4(172, b, c, d)),
  fc.tuple(octet, octet).map(([c, d]) => v4(192, 168, c, d)),
  fc.tuple(fc.integer({ min: 64, max: 127 }), octet, octet).map(([b, c, d]) => v4(100, b, c, d)),
  fc.tuple(octet, octet, octet).map(([b, c, d]) => v4(0, b, c, d)),
  fc.tuple(fc.integer({ min: 224, max: 255 }), octet, octet, octet).map(([a, b, c, d]) => v4(a, b, c, d)),
)
const hex = (n: number) => n.toString(16)
const mappedForms = (address: string) => {
  const [a, b, c, d] = address.split('.').map(Number)
  return [
    `::ffff:${address}`,
    `::ffff:${hex((a << 8) | b)}:${hex((c << 8) | d)}`,
    `0:0:0:0:0:ffff:${address}`,
    `64:ff9b::${address}`,
    `2002:${hex((a << 8) | b)}:${hex((c << 8) | d)}::1`,
  ]
}

describe('the SSRF guard', () => {
  test('refuses every private, loopback, link-local, shared, this-network and multicast IPv4 address', () => {
    fc.assert(fc.property(privateV4, (address) => !isPublicAddress(address)))
  })

  test('refuses the same addresses in IPv4-mapped, NAT64 and 6to4 IPv6 forms', () => {
    fc.assert(fc.property(privateV4, (address) => mappedForms(address).every((form) => !isPublicAddress(form))))
  })

  test('refuses IPv6 loopback, unspecified, unique-local, link-local and multicast addresses', () => {
    for (const address of ['::1', '::', 'fc00::1', 'fd12:3456::1', 'fe80::1', 'fe80::1%eth0', 'ff02::1', '::127.0.0.1'])
      assert.equal(isPublicAddress(address), false, address)
  })

  test('lets public addresses through, also in mapped form', () => {
    for (const address of ['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      assert.equal(isPublicAddress(address), true, address)
  })

  test('a call to a loopback address literal is refused before any connection', async () => {
    const client = createOutboundHttp({ allowPrivateTargets: false })
    const before = hits.length
    for (const url of [
      `${base}/x`,
      base.replace('127.0.0.1', '[::ffff:127.0.0.1]'),
      base.replace('127.0.0.1', '0.0.0.0'),
    ]) {
      await assert.rejects(client.send(url), (e: OutboundError) => e.code === 'blocked_target', url)
    }
    assert.equal(hits.length, before)
    await client.close()
  })

  test('a host name that resolves to a loopback address is refused (the resolved address is checked)', async () => {
    const client = createOutboundHttp({ allowPrivateTargets: false })
    const before = hits.length
    await assert.rejects(client.send(base.replace('127.0.0.1', 'localhost')), (e: OutboundError) => {
      assert.equal(e.code, 'blocked_target')
      return true
    })
    assert.equal(hits.length, before)
    await client.close()
  })

  test('a host name with one public and one private address is refused', async () => {
    const client = createOutboundHttp({
      allowPrivateTargets: false,
      resolve: async () => [
        { address: '93.184.216.34', family: 4 },
        { address: '127.0.0.1', family: 4 },
      ],
    })
    await assert.rejects(client.send('http://mixed.example/'), (e: OutboundError) => e.code === 'blocked_target')
    await client.close()
  })

  test('the connection goes to the address the guard checked, without a second resolution', async () => {
    const resolved: string[] = []
    const client = createOutboundHttp({
      allowPrivateTargets: false,
      // a network where only 127.0.0.1 counts as allowed; the name exists only in this resolver
      isAllowed: (address) => address === '127.0.0.1',
      resolve: async (hostname) => {
        resolved.push(hostname)
        return [{ address: resolved.length === 1 ? '127.0.0.1' : '10.0.0.1', family: 4 }]
      },
    })
    const port = (server.address() as AddressInfo).port
    const response = await client.send(`http://rebind.example:${port}/checked`)
    assert.equal(response.status, 204)
    assert.deepEqual(resolved, ['rebind.example'])
    assert.ok(hits.includes('/checked'))
    await client.close()
  })
})

describe('outbound HTTP', () => {
  test('a redirect is not followed: the 3xx is the answer', async () => {
    const client = createOutboundHttp({ allowPrivateTargets: true })
    const response = await client.send(`${base}/redirect`, { body: '{}' })
    assert.equal(response.status, 302)
    assert.ok(!hits.includes('/target'))
    await client.close()
  })

  test('a receiver that never answers fails as a timeout', async () => {
    const client = createOutboundHttp({ allowPrivateTargets: true, timeoutMs: 200 })
    const started = Date.now()
    await assert.rejects(client.send(`${base}/hang`), (e: OutboundError) => e.code === 'timeout')
    assert.ok(Date.now() - started < 2000)
    await client.close()
  })

  test('the response body is not read beyond the cap', async () => {
    const client = createOutboundHttp({ allowPrivateTargets: true, maxResponseBytes: 1024 })
    const response = await client.send(`${base}/big`)
    assert.equal(response.status, 200)
    assert.equal(response.body.length, 1024)
    await client.close()
  })

  test('a refused connection is a connection failure', async () => {
    const client = createOutboundHttp({ allowPrivateTargets: true })
    await assert.rejects(client.send('http://127.0.0.1:1/'), (e: OutboundError) => e.code === 'connection_failed')
    await client.close()
  })
})
