import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { type Static, type TObject, type TSchema, Type } from 'typebox'
import type { Permission } from '../auth/roles.ts'
import type { Scope } from '../auth/scopes.ts'
import type { TenantContext } from '../auth/tenant.ts'
import type { PlatformDeps } from '../deps.ts'
import { AppError, badRequest } from '../http/errors.ts'
import { nestsDeeperThan } from '../http/json-depth.ts'
import { closeObjects, unknownFields, unknownFieldsMessage } from '../http/strict-input.ts'

/** Who calls a tool: the tenant, and the credential a confirm_token and an idempotency key are bound to. */
export interface ToolCaller {
  tenant: TenantContext
  /** the API key's id, or the OAuth access token's id */
  credentialId: string
  /** the rate-limit bucket: an API key shares its REST budget */
  rateKey: string
}

/**
 * What a tool's functions receive: the caller, its tenant, the module services and the platform. `S` is the narrow
 * set of services a module's tools declare; the tool server builds all of them and hands them in.
 */
export interface ToolContext<S = unknown> {
  caller: ToolCaller
  tenant: TenantContext
  services: S
  platform: PlatformDeps
}

export interface ToolAnnotations {
  readOnlyHint: boolean
  destructiveHint: boolean
  idempotentHint: boolean
  openWorldHint: boolean
}

/**
 * One tool of the catalogue, calling the module services with the scope of the REST operation behind it. preview and
 * run are methods so a module's Tool<its services> is one of the catalogue's tools (HeroldModule.tools).
 */
export interface Tool<S = unknown> {
  name: string
  title: string
  description: string
  /** the scope of the REST operation it stands for; null: any valid credential (as GET /me) */
  scope: Scope | null
  /**
   * a member's permission beyond the scope (team and credential management, as the web app's routes ask): a web-app
   * session of an owner or admin has it, an OAuth token of such a member granted every scope too; API keys never
   */
  permission?: Permission
  /** the JSON Schema of its arguments, with the limits; two-step tools get confirm_token added */
  input: TObject
  /** the JSON Schema of its result (structuredContent): its answer, for two-step tools or the preview, or the error */
  output: TSchema
  annotations: ToolAnnotations
  /** two-step: what the call will do (to whom, how many), computed without changing anything */
  preview?(ctx: ToolContext<S>, args: Record<string, unknown>): Promise<Record<string, unknown>>
  /** the call carries idempotency_key: the same key replays the first result, as Idempotency-Key does on REST */
  idempotencyKey: boolean
  /** the REST operation it stands for, for the catalogue documentation */
  rest: string
  run(ctx: ToolContext<S>, args: Record<string, unknown>): Promise<Record<string, unknown>>
  /** the REST schemas its module registers (app.addSchema) that output schemas name with Type.Ref */
  references?: TSchema[]
}

export type ToolKind = 'read' | 'write' | 'destructive'

/** What a module writes to declare a tool; `kind` gives the MCP annotations, `preview` makes it two-step. */
export interface ToolDefinition<S, I extends TObject> {
  name: string
  title: string
  description: string
  scope: Scope | null
  permission?: Permission
  rest: string
  input: I
  /** what run answers (structuredContent of a successful call) */
  output: TObject
  kind: ToolKind
  /** calling it twice with the same arguments has no further effect */
  idempotent?: boolean
  /** it reaches outside Herold (a provider, a customer's phone) */
  openWorld?: boolean
  preview?: (ctx: ToolContext<S>, args: Static<I>) => Promise<Record<string, unknown>>
  run: (ctx: ToolContext<S>, args: Static<I>) => Promise<Record<string, unknown>>
}

/**
 * The defineTool of tools that call the services `S` (`const defineTool = toolsUsing<Services>()`): a module names
 * the few services its tools use, without knowing the tool server; `references` are the schemas it registers with
 * app.addSchema, which the tool server resolves where an output schema names them.
 */
export function toolsUsing<S>(references?: TSchema[]) {
  return <I extends TObject>(definition: ToolDefinition<S, I>): Tool<S> => ({ ...defineTool(definition), references })
}

/** Declares a tool; `kind` gives the MCP annotations, `preview` makes it two-step. */
export function defineTool<S, I extends TObject>(definition: ToolDefinition<S, I>): Tool<S> {
  const twoStep = definition.preview !== undefined
  // strict input: nested objects refuse unknown arguments too (src/platform/http/strict-input.ts)
  const input = closeObjects(
    twoStep
      ? Type.Object(
          {
            ...definition.input.properties,
            confirm_token: Type.Optional(
              Type.String({
                minLength: 1,
                maxLength: 100,
                description:
                  'omit on the first call: it answers a preview and a confirm_token and does nothing; call again with the same arguments and this token to execute (valid 10 minutes, once)',
              }),
            ),
          },
          { additionalProperties: false },
        )
      : Type.Object(definition.input.properties, { additionalProperties: false }),
  )
  const description = twoStep
    ? `${definition.description} Two-step: the first call returns a preview and a confirm_token and changes nothing; repeat the call with the same arguments plus confirm_token to execute.`
    : definition.description
  return {
    name: definition.name,
    title: definition.title,
    description,
    scope: definition.scope,
    permission: definition.permission,
    rest: definition.rest,
    input,
    output: outputSchemaOf(definition.output, twoStep),
    annotations: {
      readOnlyHint: definition.kind === 'read',
      destructiveHint: definition.kind === 'destructive',
      idempotentHint: definition.kind === 'read' || definition.idempotent === true,
      openWorldHint: definition.openWorld === true,
    },
    idempotencyKey: 'idempotency_key' in definition.input.properties,
    preview: definition.preview as Tool<S>['preview'],
    run: definition.run as Tool<S>['run'],
  }
}

const Preview = Type.Object(
  {
    confirmation_required: Type.Literal(true),
    executed: Type.Literal(false),
    preview: Type.Object(
      {},
      { additionalProperties: true, description: 'what will happen, to whom and to how many; nothing was done' },
    ),
    confirm_token: Type.String({ description: 'call the same tool with the same arguments and this token' }),
    expires_at: Type.String({ format: 'date-time' }),
    next: Type.String(),
  },
  { title: 'Preview', description: 'the first call of a two-step tool: a preview and a confirm_token, nothing done' },
)

/** The REST error envelope a failed call carries as structuredContent (isError: true), with the HTTP status. */
export const ToolError = Type.Object(
  {
    error: Type.Object(
      { code: Type.String(), key: Type.String(), message: Type.String() },
      { additionalProperties: true },
    ),
    status: Type.Integer(),
  },
  { title: 'Error', description: 'isError: true; code and key to branch on, the REST status' },
)

/**
 * A tool's outputSchema (MCP): an object that is its answer, or for a two-step tool the preview of the first call,
 * or the error envelope of a failed call (SDK clients validate structuredContent whenever it is present).
 */
function outputSchemaOf(result: TObject, twoStep: boolean): TSchema {
  const answer = { ...result, title: (result as { title?: string }).title ?? 'Result' }
  return Type.Unsafe({
    type: 'object',
    anyOf: twoStep ? [answer, Preview, ToolError] : [answer, ToolError],
  })
}

// Fastify's own validation options (src/app.ts), so a tool's arguments meet the same rules as a REST body
const ajv = new Ajv({
  removeAdditional: false,
  coerceTypes: 'array',
  useDefaults: true,
  // an assistant corrects every argument at once
  allErrors: true,
  discriminator: true,
  strict: false,
})
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv
addFormats(ajv)
// the value a tool hands its REST rule is its own projection of arguments already checked strictly: extra keys
// (confirm_token, idempotency_key) are the tool's, not the caller's mistakes
const restAjv = new Ajv({
  removeAdditional: 'all',
  coerceTypes: 'array',
  useDefaults: true,
  discriminator: true,
  strict: false,
})
addFormats(restAjv)

const compiled = new WeakMap<TSchema, ValidateFunction>()
const restCompiled = new WeakMap<TSchema, ValidateFunction>()

function validatorOf(cache: WeakMap<TSchema, ValidateFunction>, instance: Ajv, schema: TSchema): ValidateFunction {
  let validate = cache.get(schema)
  if (!validate) {
    validate = instance.compile(schema)
    cache.set(schema, validate)
  }
  return validate
}

function describe(where: string, error: ErrorObject | undefined): string {
  if (!error) return `${where} is invalid`
  const path = error.instancePath.replace(/^\//, '').replaceAll('/', '.')
  if (error.keyword === 'additionalProperties') {
    const extra = (error.params as { additionalProperty?: string }).additionalProperty
    return `${where}${path ? `.${path}` : ''} has an unknown field ${extra}`
  }
  return `${path ? `${where === 'arguments' ? '' : `${where}.`}${path}` : where} ${error.message ?? 'is invalid'}`
}

/** No tool's schema nests this deep; deeper arguments would overflow structuredClone and Ajv (a 500, not a 400). */
export const MAX_ARGUMENT_DEPTH = 32

function refuseDeepNesting(value: unknown, where: string): void {
  if (nestsDeeperThan(value, MAX_ARGUMENT_DEPTH)) {
    throw new AppError(400, 'bad_request', `${where} nest deeper than ${MAX_ARGUMENT_DEPTH} levels`, {
      key: 'too_deep',
    })
  }
}

/** Checks a tool's arguments against its schema (defaults filled in); 400 bad_request naming the argument. */
export function validateArguments(tool: Tool, args: unknown): Record<string, unknown> {
  refuseDeepNesting(args, 'arguments')
  const value = structuredClone(args ?? {})
  const validate = validatorOf(compiled, ajv, tool.input)
  if (!validate(value)) {
    const unknown = unknownFields(tool.input, value)
    if (unknown.length > 0) {
      throw badRequest(unknownFieldsMessage('', unknown, 'argument'), 'bad_request', { unknown_fields: unknown })
    }
    const messages = [...new Set((validate.errors ?? []).map((error) => describe('arguments', error)))]
    throw new AppError(400, 'bad_request', messages.slice(0, 5).join('; ') || 'arguments are invalid')
  }
  return value as Record<string, unknown>
}

/**
 * The REST rule behind a tool decides where it is stricter than the tool (a 60-character tag against the API's 40):
 * the value is checked against the REST operation's own schema and its error answered.
 */
export const restRule = ruleOf(restCompiled, restAjv)

/** A check of a value against a schema by one Ajv: the checked copy, or 400 naming the field as REST would. */
function ruleOf(cache: WeakMap<TSchema, ValidateFunction>, instance: Ajv) {
  return <S extends TSchema>(schema: S, value: unknown, where: string): Static<S> => {
    refuseDeepNesting(value, where)
    const copy = structuredClone(value)
    const validate = validatorOf(cache, instance, schema)
    if (!validate(copy)) {
      throw new AppError(400, 'bad_request', `${describe(where, validate.errors?.[0])} (the REST rule)`)
    }
    return copy as Static<S>
  }
}

// an operation's own rule on what a tool hands it: the value holds only the operation's fields, so nothing is
// stripped (stripping inside a union of objects would drop the fields of every variant but the first)
const operationAjv = new Ajv({
  removeAdditional: false,
  coerceTypes: 'array',
  useDefaults: true,
  discriminator: true,
  strict: false,
})
addFormats(operationAjv)
const operationCompiled = new WeakMap<TSchema, ValidateFunction>()

/** Checks a value a tool hands an operation against the operation's schema; 400 naming the field, as REST would. */
export const operationRule = ruleOf(operationCompiled, operationAjv)
