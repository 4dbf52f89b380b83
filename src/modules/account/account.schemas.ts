import { Type } from 'typebox'

export const MeResponse = Type.Object({
  account: Type.Object({
    id: Type.String({ format: 'uuid' }),
    name: Type.String({ description: 'suitable as a connection label' }),
  }),
  key: Type.Union([Type.Object({ id: Type.String(), name: Type.String(), prefix: Type.String() }), Type.Null()], {
    description: 'null when called through the tool-server OAuth flow or the web app',
  }),
  auth_type: Type.Union([Type.Literal('api_key'), Type.Literal('oauth'), Type.Literal('session')], {
    description: 'session: the web app, signed in as a member (its scopes follow the role)',
  }),
  scopes: Type.Array(Type.String()),
  rate_limit: Type.Object({ requests_per_minute: Type.Integer() }),
})
