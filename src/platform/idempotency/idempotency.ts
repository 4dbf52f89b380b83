import { createHash } from 'node:crypto'
import { and, eq, isNull, lte } from 'drizzle-orm'
import type { Clock } from '../clock.ts'
import type { Db } from '../db/client.ts'
import { AppError } from '../http/errors.ts'
import { idempotencyKeys } from './idempotency.tables.ts'

export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000
/** How long a first request may run before another process may take its key over (it crashed). */
export const IDEMPOTENCY_LEASE_MS = 60 * 1000
const KEY_FORMAT = /^[\x21-\x7e]{1,255}$/

export function isValidIdempotencyKey(key: string): boolean {
  return KEY_FORMAT.test(key)
}

/** Stable JSON: object keys sorted, so the same body in another key order is the same request. */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return ''
  if (value === null || typeof value !== 'object') return JSON.stringify(value)
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
}

export function requestFingerprint(method: string, url: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method.toUpperCase()}\n${url}\n${canonicalJson(body)}`)
    .digest('hex')
}

export interface IdempotencyScope {
  accountId: string
  apiKeyId: string
  key: string
}

export type Claim =
  | { kind: 'started' }
  | { kind: 'replay'; status: number; headers: Record<string, string>; body: string }
  | { kind: 'in_progress' }
  | { kind: 'mismatch' }

/**
 * A claim the caller cannot go on with: 422 when the key came with another request, 409 while the first one runs.
 * `words` name the key and its requests as the caller sees them (Idempotency-Key and requests, or a tool's arguments).
 */
export function refuseClaim(claim: Claim, words: { key: string; request: string; other: string }): void {
  if (claim.kind === 'mismatch') {
    throw new AppError(422, 'idempotency_key_mismatch', `This ${words.key} was used with ${words.other}`)
  }
  if (claim.kind === 'in_progress') {
    throw new AppError(
      409,
      'idempotency_in_progress',
      `The first ${words.request} with this ${words.key} is still running`,
      {
        headers: { 'retry-after': '1' },
      },
    )
  }
}

/**
 * Claims the key by inserting first (a unique key decides, never a read-then-write). A second caller sees the
 * stored response, the running first request, or a different request under the same key.
 */
export async function claimIdempotencyKey(
  db: Db,
  clock: Clock,
  scope: IdempotencyScope,
  fingerprint: string,
): Promise<Claim> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const now = clock.now()
    const inserted = await db
      .insert(idempotencyKeys)
      .values({
        ...scope,
        fingerprint,
        lockedUntil: new Date(now.getTime() + IDEMPOTENCY_LEASE_MS),
        expiresAt: new Date(now.getTime() + IDEMPOTENCY_WINDOW_MS),
        createdAt: now,
      })
      .onConflictDoNothing()
      .returning({ key: idempotencyKeys.key })
    if (inserted.length > 0) return { kind: 'started' }

    const [row] = await db.select().from(idempotencyKeys).where(matches(scope))
    if (!row) continue
    if (row.expiresAt <= now) {
      await db.delete(idempotencyKeys).where(and(matches(scope), lte(idempotencyKeys.expiresAt, now)))
      continue
    }
    if (row.fingerprint !== fingerprint) return { kind: 'mismatch' }
    if (row.responseStatus !== null) {
      return {
        kind: 'replay',
        status: row.responseStatus,
        headers: row.responseHeaders ?? {},
        body: row.responseBody ?? '',
      }
    }
    if (row.lockedUntil > now) return { kind: 'in_progress' }
    // The first request's process died: take the key over, unless someone else just did.
    const taken = await db
      .update(idempotencyKeys)
      .set({ lockedUntil: new Date(now.getTime() + IDEMPOTENCY_LEASE_MS) })
      .where(
        and(matches(scope), isNull(idempotencyKeys.responseStatus), eq(idempotencyKeys.lockedUntil, row.lockedUntil)),
      )
      .returning({ key: idempotencyKeys.key })
    if (taken.length > 0) return { kind: 'started' }
  }
  return { kind: 'in_progress' }
}

/** Stores the final response; 429 and 503 are not stored, so the key can be used again. */
export async function completeIdempotencyKey(
  db: Db,
  scope: IdempotencyScope,
  response: { status: number; headers: Record<string, string>; body: string },
): Promise<void> {
  if (response.status === 429 || response.status === 503) {
    await releaseIdempotencyKey(db, scope)
    return
  }
  await db
    .update(idempotencyKeys)
    .set({ responseStatus: response.status, responseHeaders: response.headers, responseBody: response.body })
    .where(and(matches(scope), isNull(idempotencyKeys.responseStatus)))
}

/** Frees a key whose request ended without a storable response. */
export async function releaseIdempotencyKey(db: Db, scope: IdempotencyScope): Promise<void> {
  await db.delete(idempotencyKeys).where(and(matches(scope), isNull(idempotencyKeys.responseStatus)))
}

function matches(scope: IdempotencyScope) {
  return and(
    eq(idempotencyKeys.accountId, scope.accountId),
    eq(idempotencyKeys.apiKeyId, scope.apiKeyId),
    eq(idempotencyKeys.key, scope.key),
  )
}
