import type { Retention } from '../platform/db/maintenance.ts'

/** The tool server's tables: OAuth codes and refresh tokens after the retention period past expiry; confirmations. */
export const mcpRetention: Retention = {
  deletes: [
    { table: 'oauth_codes', statement: 'DELETE FROM oauth_codes WHERE expires_at < $1', cutoff: 'retention' },
    {
      table: 'oauth_refresh_tokens',
      statement: 'DELETE FROM oauth_refresh_tokens WHERE expires_at < $1',
      cutoff: 'retention',
    },
    // a confirm_token is useless after its 10 minutes: nothing to keep
    { table: 'tool_confirmations', statement: 'DELETE FROM tool_confirmations WHERE expires_at <= $1', cutoff: 'now' },
  ],
  churn: ['tool_confirmations'],
}
