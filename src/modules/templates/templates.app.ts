import type { FastifyInstance } from 'fastify'
import { type Static, Type } from 'typebox'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Db } from '../../platform/db/client.ts'
import type { PlatformDeps } from '../../platform/module.ts'
import {
  BUTTON_TYPES,
  CHANNELS,
  type CheckedTemplate,
  checkTemplate,
  LIMITS,
  PURPOSES,
  providerName,
  templateVariables,
} from './templates.check.ts'
import { providerNameTaken } from './templates.repository.ts'

const literals = <T extends readonly string[]>(values: T) => Type.Union(values.map((v) => Type.Literal(v)))

/** A template as the editor holds it while typing: lax limits, so every draft can be checked. */
export const CheckBody = Type.Object(
  {
    id: Type.Optional(
      Type.String({ format: 'uuid', description: 'the template being edited (its own name is no clash)' }),
    ),
    name: Type.String({ maxLength: 1000 }),
    content: Type.String({ maxLength: 40000 }),
    channel: Type.Optional(literals(CHANNELS)),
    subject: Type.Optional(Type.Union([Type.String({ maxLength: 1000 }), Type.Null()])),
    purpose: Type.Optional(literals(PURPOSES)),
    language: Type.Optional(Type.String({ maxLength: 20, description: 'default the account language' })),
    buttons: Type.Optional(
      Type.Array(
        Type.Object({
          type: literals(BUTTON_TYPES),
          text: Type.String({ maxLength: 200 }),
          url: Type.Optional(Type.Union([Type.String({ maxLength: 4000 }), Type.Null()])),
        }),
        { maxItems: 20 },
      ),
    ),
    header_media: Type.Optional(
      Type.Union([
        Type.Object({
          url: Type.String({ maxLength: 4000 }),
          mime_type: Type.Optional(Type.Union([Type.String({ maxLength: 100 }), Type.Null()])),
        }),
        Type.Null(),
      ]),
    ),
  },
  { additionalProperties: false },
)

export const CheckResponse = Type.Object({
  issues: Type.Array(
    Type.Object({
      code: Type.String({ description: 'stable reason, such as variables_adjacent' }),
      field: Type.String({ description: 'name, content, buttons/1/url, …' }),
      message: Type.String({ description: 'English' }),
    }),
    { description: 'every rule of the deterministic check the draft breaks; empty when it passes' },
  ),
  provider_name: Type.String(),
  variables: Type.Array(Type.String()),
  limits: Type.Object({ chat_body: Type.Integer(), content: Type.Integer(), subject: Type.Integer() }),
})

/** The web app's live template check (under /app, with the session): the draft as typed, nothing stored. */
export function templatesAppRoutes(deps: Pick<PlatformDeps, 'database'>) {
  return async (app: FastifyInstance): Promise<void> => {
    app.post<{ Body: Static<typeof CheckBody> }>(
      '/templates/check',
      {
        config: { scope: 'templates:read' },
        schema: {
          operationId: 'checkTemplate',
          summary: "The deterministic check's issues of a template as typed, without saving it",
          description:
            'Needs templates:read. The same rules as issues of GET /v1/templates/{id} (templates.check.ts): name, ' +
            'language, content length, variables and their placement, buttons, header image, and whether another chat ' +
            'template of the account has the same provider name in that language. Changes nothing.',
          tags: ['app'],
          body: CheckBody,
          response: { 200: CheckResponse },
        },
      },
      async (request) => {
        return checkDraft(deps.database.orm, request.tenant, request.body)
      },
    )
  }
}

/**
 * The deterministic check of a template as typed (the web app's editor, the check_template tool): its issues, its
 * provider name, its variables and the limits. Changes nothing.
 */
export async function checkDraft(
  db: Db,
  tenant: TenantContext,
  body: Static<typeof CheckBody>,
): Promise<Static<typeof CheckResponse>> {
  const channel = body.channel ?? 'chat'
  const draft: CheckedTemplate = {
    name: body.name,
    content: body.content,
    channel: channel as CheckedTemplate['channel'],
    subject: body.subject ?? null,
    purpose: (body.purpose ?? 'marketing') as CheckedTemplate['purpose'],
    language: body.language || tenant.account.language,
    buttons: (body.buttons ?? []).map((b) => ({
      type: b.type as CheckedTemplate['buttons'][number]['type'],
      text: b.text,
      url: b.url ?? null,
    })),
    headerMedia: body.header_media ?? null,
  }
  const name = providerName(draft.name)
  const taken =
    channel === 'chat' &&
    name !== '' &&
    (await providerNameTaken(db, tenant.accountId, {
      // no template has the nil id: a new draft clashes with every other one
      id: body.id ?? '00000000-0000-0000-0000-000000000000',
      providerName: name,
      language: draft.language,
    }))
  return {
    issues: checkTemplate(draft, { providerNameTaken: taken }),
    provider_name: name,
    variables: templateVariables(draft),
    limits: { chat_body: LIMITS.chatBody, content: LIMITS.content, subject: LIMITS.subject },
  }
}
