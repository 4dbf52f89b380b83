import type { Retention } from '../db/maintenance.ts'

/** OAuth access tokens go after the retention period past their expiry. */
export const authRetention: Retention = {
  deletes: [
    {
      table: 'oauth_access_tokens',
      statement: 'DELETE FROM oauth_access_tokens WHERE expires_at < $1',
      cutoff: 'retention',
    },
  ],
  churn: ['oauth_access_tokens'],
}
