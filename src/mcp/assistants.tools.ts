import { Type } from 'typebox'
import { Uuid } from '../platform/tools/common.ts'
import { obj, ok } from '../platform/tools/outputs.ts'
import { toolsUsing } from '../platform/tools/tool.ts'
import type { AssistantGrants } from './grants.ts'

/**
 * The tool server's own tools: the assistants connected through its OAuth grants (no module's REST operation).
 * A member's permission decides (keys:manage: owners and admins), never an API key.
 */

const Assistant = Type.Object({
  id: Type.String({ format: 'uuid', description: 'the grant id' }),
  client_id: Type.String(),
  client_name: Type.String(),
  scopes: Type.Array(Type.String()),
  resource: Type.String({ description: 'the tool server the tokens are bound to' }),
  approved_by: Type.Union([
    Type.Object({ id: Type.String({ format: 'uuid' }), name: Type.String(), email: Type.String() }),
    Type.Null(),
  ]),
  approved_at: Type.String({ format: 'date-time' }),
  last_token_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
})

/** The tool server hands its grants in beside the module services. */
const defineTool = toolsUsing<{ assistants: AssistantGrants }>()

export const listConnectedAssistantsTool = defineTool({
  name: 'list_connected_assistants',
  title: 'List connected assistants',
  description:
    'The AI assistants connected to this account through OAuth sign-in (Claude, ChatGPT, Cursor, ...), newest first: the client’s name, the scopes granted, who approved it and when, and when it last got a token.',
  scope: 'team:read',
  permission: 'keys:manage',
  rest: 'the OAuth grants of the account (no REST route)',
  output: obj({ assistants: Type.Array(Assistant) }),
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    return { assistants: await ctx.services.assistants.list(ctx.tenant.accountId) }
  },
})

export const disconnectAssistantTool = defineTool({
  name: 'disconnect_assistant',
  title: 'Disconnect an assistant',
  description:
    'Revoke an assistant’s OAuth grant: its access tokens stop at once and its refresh token no longer works; to use Herold again it must be signed in and approved anew.',
  scope: 'team:read',
  permission: 'keys:manage',
  rest: 'POST /oauth/revoke for a grant (by its id)',
  output: obj({ ...ok, assistant: Assistant }),
  kind: 'destructive',
  idempotent: true,
  input: Type.Object({ assistant_id: Uuid('the grant id, from list_connected_assistants') }),
  async preview(ctx, args) {
    const assistant = await ctx.services.assistants.get(ctx.tenant.accountId, args.assistant_id)
    return {
      action: 'disconnect an assistant: its tokens stop working at once',
      assistant,
      live_access_tokens: await ctx.services.assistants.liveTokens(ctx.tenant.accountId, args.assistant_id),
    }
  },
  async run(ctx, args) {
    const assistant = await ctx.services.assistants.disconnect(ctx.tenant.accountId, args.assistant_id)
    return { ok: true, assistant }
  },
})

export const assistantTools = [listConnectedAssistantsTool, disconnectAssistantTool]
