import type { Retention } from '../db/maintenance.ts'

/** Idempotency records go once their window has passed. */
export const idempotencyRetention: Retention = {
  deletes: [
    { table: 'idempotency_keys', statement: 'DELETE FROM idempotency_keys WHERE expires_at <= $1', cutoff: 'now' },
  ],
  churn: ['idempotency_keys'],
}
