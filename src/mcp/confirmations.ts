import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { and, eq, gt, isNull } from 'drizzle-orm'
import { hashSecret } from '../platform/auth/credentials.ts'
import type { Clock } from '../platform/clock.ts'
import type { Db } from '../platform/db/client.ts'
import { AppError } from '../platform/http/errors.ts'
import { canonicalJson } from '../platform/idempotency/idempotency.ts'
import { toolConfirmations } from './mcp.tables.ts'

/** How long a confirm_token stays usable. */
export const CONFIRMATION_TTL_MS = 10 * 60 * 1000
const TOKEN_PREFIX = 'hct_'

export interface ConfirmationBinding {
  accountId: string
  credentialId: string
  tool: string
  argumentsHash: string
}

/** The hash a confirm_token is bound to: the arguments in a stable order, without the token itself. */
export function argumentsHash(args: Record<string, unknown>): string {
  const { confirm_token: _token, ...rest } = args
  return createHash('sha256').update(canonicalJson(rest)).digest('hex')
}

/** A new confirm_token; only its hash is stored. */
export async function issueConfirmation(
  db: Db,
  clock: Clock,
  binding: ConfirmationBinding,
): Promise<{ token: string; expiresAt: Date }> {
  const token = TOKEN_PREFIX + randomBytes(24).toString('base64url')
  const expiresAt = new Date(clock.now().getTime() + CONFIRMATION_TTL_MS)
  await db.insert(toolConfirmations).values({
    accountId: binding.accountId,
    id: randomUUID(),
    tokenHash: hashSecret(token),
    credentialId: binding.credentialId,
    tool: binding.tool,
    argumentsHash: binding.argumentsHash,
    expiresAt,
  })
  return { token, expiresAt }
}

const refused = (key: string, message: string) =>
  new AppError(400, 'confirm_token_invalid', `${message}; nothing was done`, { key })

/**
 * Uses the token once, in one statement that also checks every binding; when it matches nothing, says why
 * (unknown, another tool, changed arguments, another credential, expired, already used). Throws on refusal.
 */
export async function consumeConfirmation(
  db: Db,
  clock: Clock,
  binding: ConfirmationBinding,
  token: string,
): Promise<void> {
  const now = clock.now()
  const hash = hashSecret(token)
  const used = await db
    .update(toolConfirmations)
    .set({ usedAt: now })
    .where(
      and(
        eq(toolConfirmations.tokenHash, hash),
        eq(toolConfirmations.accountId, binding.accountId),
        eq(toolConfirmations.credentialId, binding.credentialId),
        eq(toolConfirmations.tool, binding.tool),
        eq(toolConfirmations.argumentsHash, binding.argumentsHash),
        isNull(toolConfirmations.usedAt),
        gt(toolConfirmations.expiresAt, now),
      ),
    )
    .returning({ id: toolConfirmations.id })
  if (used.length > 0) return
  const [row] = await db
    .select()
    .from(toolConfirmations)
    .where(and(eq(toolConfirmations.tokenHash, hash), eq(toolConfirmations.accountId, binding.accountId)))
  if (!row) throw refused('confirm_token_unknown', 'This confirm_token is unknown')
  if (row.credentialId !== binding.credentialId) {
    throw refused('confirm_token_credential', 'This confirm_token was issued to another credential')
  }
  if (row.tool !== binding.tool) {
    throw refused('confirm_token_tool', `This confirm_token was issued for the tool ${row.tool}`)
  }
  if (row.usedAt) throw refused('confirm_token_used', 'This confirm_token was already used')
  if (row.expiresAt.getTime() <= now.getTime()) {
    throw refused('confirm_token_expired', 'This confirm_token expired (it is valid for 10 minutes)')
  }
  throw refused(
    'confirm_token_arguments',
    'The arguments differ from those of the preview this confirm_token was issued for; call without confirm_token for a new preview',
  )
}
