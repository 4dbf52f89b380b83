/** Section 5 of the spec: every scope a credential can carry. */
export const SCOPES = [
  'contacts:read',
  'contacts:write',
  'contacts:delete',
  'messages:write',
  'automations:read',
  'automations:write',
  'automations:delete',
  'templates:read',
  'templates:write',
  'templates:submit',
  'templates:delete',
  'newsletters:read',
  'newsletters:write',
  'newsletters:schedule',
  'newsletters:delete',
  'followups:read',
  'followups:write',
  'settings:read',
  'settings:write',
  'inbox:read',
  'webhooks:read',
  'webhooks:write',
  'team:read',
  'stats:read',
  'media:read',
  'media:write',
  'knowledge:write',
] as const

export type Scope = (typeof SCOPES)[number]

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value)
}

/** Parses "all" or a comma-separated list; throws naming the unknown scopes. */
export function parseScopes(input: string): Scope[] {
  if (input.trim() === 'all') return [...SCOPES]
  const requested = [
    ...new Set(
      input
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ]
  const unknown = requested.filter((s) => !isScope(s))
  if (unknown.length > 0) throw new Error(`unknown scope(s): ${unknown.join(', ')}; known: ${SCOPES.join(', ')}`)
  if (requested.length === 0) throw new Error('at least one scope is required (or "all")')
  return requested as Scope[]
}
