import type { Role } from './people.tables.ts'
import { SCOPES, type Scope } from './scopes.ts'

/** What a member may do in the app beyond the API's scopes. */
export type Permission = 'keys:manage' | 'team:manage' | 'owners:manage'

const READ_SCOPES = SCOPES.filter((s) => s.endsWith(':read'))

/** The API scopes a session of each role carries when the app calls /v1 (docs/people.md has the table). */
export const ROLE_SCOPES: Record<Role, readonly Scope[]> = {
  owner: SCOPES,
  admin: SCOPES,
  member: [
    ...READ_SCOPES,
    'contacts:write',
    'messages:write',
    'templates:write',
    'templates:submit',
    'newsletters:write',
    'newsletters:schedule',
    'followups:write',
    'automations:write',
    'media:write',
    'knowledge:write',
  ],
  viewer: READ_SCOPES,
}

export const ROLE_PERMISSIONS: Record<Role, readonly Permission[]> = {
  owner: ['keys:manage', 'team:manage', 'owners:manage'],
  admin: ['keys:manage', 'team:manage'],
  member: [],
  viewer: [],
}
