import type { Retention } from '../platform/db/maintenance.ts'

/**
 * The tool server's tables: OAuth codes and refresh tokens after the retention period past expiry; registered clients
 * never used; confirmations.
 */
export const mcpRetention: Retention = {
  deletes: [
    { table: 'oauth_codes', statement: 'DELETE FROM oauth_codes WHERE expires_at < $1', cutoff: 'retention' },
    {
      table: 'oauth_refresh_tokens',
      statement: 'DELETE FROM oauth_refresh_tokens WHERE expires_at < $1',
      cutoff: 'retention',
    },
    // a registered client that never completed an authorization (no grant) within 7 days (UNUSED_CLIENT_DAYS in
    // oauth.ts): registration is open to anyone, so what nobody used does not stay
    {
      table: 'oauth_clients',
      statement: `DELETE FROM oauth_clients c WHERE c.created_at < $1::timestamptz - interval '7 days'
        AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = c.client_id)`,
      cutoff: 'now',
    },
    // a confirm_token is useless after its 10 minutes: nothing to keep
    { table: 'tool_confirmations', statement: 'DELETE FROM tool_confirmations WHERE expires_at <= $1', cutoff: 'now' },
  ],
  churn: ['tool_confirmations'],
}
