import type { FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from './errors.ts'

// Routes that take large bodies (a 100 MB file as base64 JSON, a 20 MB knowledge document) hold them in memory while
// they are read, parsed and decoded. One such body fits the server's memory; several at once would not. So the
// bytes of large bodies in flight have one budget per process: a request is let in when its Content-Length (or, sent
// chunked, its route's body limit) fits what is left, or when no other large body is in flight (so one of any
// allowed size always passes); otherwise it is refused before its body is read: 429 rate_limited (key
// uploads_in_flight) with Retry-After, like any rate limit.

/** Bytes of large bodies in flight, per process. */
export const BODY_BUDGET_BYTES = 192 * 1024 * 1024
/** Seconds the refused client is asked to wait. */
export const BODY_BUDGET_RETRY_AFTER = 5

export const bodyBudgetError =
  'rate_limited (key uploads_in_flight, Retry-After): other large uploads are being read; send it again after Retry-After seconds'

export interface BodyBudget {
  /** bytes reserved now */
  inFlight(): number
  /** An onRequest hook for a route with body limit `limit`; `skip` exempts requests streamed elsewhere. */
  hook(
    limit: number,
    skip?: (request: FastifyRequest) => boolean,
  ): (request: FastifyRequest, reply: FastifyReply) => Promise<void>
}

export function createBodyBudget(budget = BODY_BUDGET_BYTES): BodyBudget {
  let inFlight = 0
  return {
    inFlight: () => inFlight,
    hook: (limit, skip) => async (request, reply) => {
      if (skip?.(request)) return
      const declared = Number(request.headers['content-length'])
      // a declared length over the route's limit is refused by the body parser with 413, without reading it
      const bytes = Number.isFinite(declared) && declared >= 0 ? Math.min(declared, limit) : limit
      if (bytes === 0) return
      if (inFlight > 0 && inFlight + bytes > budget) {
        throw new AppError(429, 'rate_limited', 'Other large uploads are being read; send it again in a few seconds', {
          key: 'uploads_in_flight',
          headers: { 'retry-after': String(BODY_BUDGET_RETRY_AFTER) },
        })
      }
      inFlight += bytes
      let released = false
      const release = () => {
        if (released) return
        released = true
        inFlight -= bytes
      }
      reply.raw.once('finish', release)
      reply.raw.once('close', release)
    },
  }
}

/** The process's budget, shared by every route with a large body. */
export const largeBodies = createBodyBudget()
