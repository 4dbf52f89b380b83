import { type TObject, type TProperties, type TSchema, Type } from 'typebox'
import { requireScope } from '../auth/authenticate.ts'
import type { Permission } from '../auth/roles.ts'
import type { Scope } from '../auth/scopes.ts'
import { type AnyOperation, type Operation, type OperationCall, restName, type StaticOf } from '../http/operation.ts'
import { withOk } from './outputs.ts'
import { defineTool, operationRule, type Tool, type ToolContext, type ToolKind } from './tool.ts'

type Source = 'params' | 'query' | 'body'
const SOURCES: Source[] = ['params', 'query', 'body']

/**
 * A tool that stands for an operation: its name and words for an assistant, and how its arguments map onto the
 * operation's fields. Everything else (the scope, the argument schemas and their limits, the answer, the REST name) is
 * the operation's, so a rule exists once. Its title is the operation's summary where that says it for an assistant too.
 */
export interface OperationToolDefinition<S, C extends OperationCall = OperationCall> {
  name: string
  /** the operation's summary unless said */
  title?: string
  description: string
  /** the tool's argument name for an operation field where the spec names it differently: `{ template_id: 'id' }` */
  rename?: Record<string, string>
  /** the spec's argument for the operation's path `id`, as the module's (ModuleTools) but for this tool only */
  id?: IdArgument
  /** a description of an argument for an assistant (by the tool's argument name), where the field's own is not enough */
  describe?: Record<string, string>
  /** only these operation fields become arguments (by the operation's field name) */
  pick?: string[]
  /** these operation fields are not arguments (by the operation's field name) */
  omit?: string[]
  /** values of operation fields the tool sets itself: `{ body: { channel: 'chat' } }` */
  fixed?: Partial<Record<Source, Record<string, unknown>>>
  /**
   * an argument's own schema where the spec gives the tool other limits than the operation's field (by the tool's
   * argument name); the operation's rule is still checked on what the call hands it
   */
  schemas?: Record<string, TSchema>
  /** arguments the spec requires although the operation's field has a default (by the tool's argument name) */
  required?: string[]
  /** arguments of the tool's own beyond the operation's fields (idempotency_key); run receives them in `extra` */
  extra?: TProperties
  /** read for GET, destructive for DELETE, write otherwise, unless said */
  kind?: ToolKind
  idempotent?: boolean
  openWorld?: boolean
  /** where the operation takes several scopes, or none (a web-app operation of a permission): the tool's */
  scope?: Scope | null
  permission?: Permission
  /** the REST name, where it says more than the method and path (`POST /contacts?upsert=true`) */
  rest?: string
  /** the answer, where the tool's differs from the operation's */
  output?: TObject
  /** the answer is the operation's with ok: true, as the spec's write tools answer */
  ok?: true
  /** makes the tool two-step: what the call will do, computed without changing anything */
  preview?: (ctx: ToolContext<S>, call: C, extra: Record<string, unknown>) => Promise<Record<string, unknown>>
  /** what the call does, where it is more than the operation's handler (an answer as a handler's) */
  run?: (ctx: ToolContext<S>, call: C, extra: Record<string, unknown>) => Promise<object>
}

const propertiesOf = (schema: TSchema | undefined): TProperties =>
  ((schema as TObject | undefined)?.properties ?? {}) as TProperties

/** The schema without its optional mark (TypeBox's '~optional'). */
function requiredOf(schema: TSchema): TSchema {
  if (!('~optional' in schema)) return schema
  const { '~optional': _optional, ...required } = schema as TSchema & { '~optional': unknown }
  return required as TSchema
}

/** The call an operation's handler receives, typed by its schemas: what a tool's preview and run get. */
type CallOf<O> =
  O extends Operation<infer _S, infer P, infer Q, infer B>
    ? OperationCall<StaticOf<P>, StaticOf<Q>, StaticOf<B>>
    : OperationCall

/**
 * The spec's argument for an operation's path `id` (`followup_id`): its own schema where the spec gives one (a uuid,
 * where REST answers a malformed id with 404), else the path's with this description.
 */
export type IdArgument = { name: string; schema: TSchema } | { name: string; description: string }

/** What holds for every tool of a module. */
export interface ModuleTools {
  /** the schemas its routes register, as toolsUsing takes them */
  references?: TSchema[]
  /** the spec's argument for an operation's path `id` where a tool does not rename `id` */
  id?: IdArgument
  /** the scope of every tool that does not name its own (people's tools need team:read besides a permission) */
  scope?: Scope
}

/**
 * The tools of a module whose operations call the services `S`; `references` as toolsUsing takes them. Each tool stands
 * for an operation of the module's routes or app operations: its arguments, limits, scope and answer are the
 * operation's, the spec's argument names (`template_id`) are mapped onto its fields, and where the spec gives other
 * limits (`schemas`) the operation's rule is still checked. A module's tools are listed in the order the tool server
 * lists them.
 */
export function operationTools<S>(module: TSchema[] | ModuleTools = {}) {
  const { references, id, scope } = Array.isArray(module) ? { references: module } : module
  return <O extends AnyOperation<S>>(operation: O, definition: OperationToolDefinition<S, CallOf<O>>): Tool<S> => {
    const general = { scope, ...(definition as unknown as OperationToolDefinition<S>) }
    const ownId = general.id ?? id
    return operationTool(operation, ownId ? withModuleId(operation, general, ownId) : general, references)
  }
}

/** The definition with the module's argument for the path `id`, where the operation has one the tool takes as is. */
function withModuleId<S>(
  operation: AnyOperation<S>,
  definition: OperationToolDefinition<S>,
  id: IdArgument,
): OperationToolDefinition<S> {
  const { rename = {}, schemas, describe, pick, omit } = definition
  const taken = !Object.values(rename).includes('id') && (pick?.includes('id') ?? true) && !omit?.includes('id')
  if (!taken || !('id' in propertiesOf(operation.params))) return definition
  const named = { ...definition, rename: { [id.name]: 'id', ...rename } }
  if ('schema' in id) return { ...named, schemas: { [id.name]: id.schema, ...schemas } }
  return { ...named, describe: { [id.name]: id.description, ...describe } }
}

function operationTool<S>(
  operation: AnyOperation<S>,
  definition: OperationToolDefinition<S>,
  references?: TSchema[],
): Tool<S> {
  const toolName = new Map(Object.entries(definition.rename ?? {}).map(([tool, field]) => [field, tool]))
  const taken = (field: string) =>
    (definition.pick ? definition.pick.includes(field) : true) &&
    !definition.omit?.includes(field) &&
    !(field in (definition.fixed?.params ?? {})) &&
    !(field in (definition.fixed?.query ?? {})) &&
    !(field in (definition.fixed?.body ?? {}))
  // each argument: the operation field it fills and where that field goes
  const fields = new Map<string, { source: Source; field: string }>()
  const properties: TProperties = {}
  for (const source of SOURCES) {
    for (const [field, schema] of Object.entries(propertiesOf(operation[source]))) {
      if (!taken(field)) continue
      const name = toolName.get(field) ?? field
      if (fields.has(name)) throw new Error(`${definition.name}: two operation fields become the argument ${name}`)
      fields.set(name, { source, field })
      const description = definition.describe?.[name]
      const own = definition.schemas?.[name] ?? (description ? ({ ...schema, description } as TSchema) : schema)
      // an argument with a default may be left out, as a REST query parameter with one may ('~optional' is hidden)
      if (definition.required?.includes(name)) properties[name] = requiredOf(own)
      else properties[name] = '~optional' in schema || 'default' in schema ? Type.Optional(own) : own
    }
  }
  const named = [definition.rename, definition.describe, definition.schemas]
    .flatMap((map) => Object.keys(map ?? {}))
    .concat(definition.required ?? [])
  for (const name of named) {
    if (!fields.has(name)) throw new Error(`${definition.name}: ${name} names no field of ${operation.operationId}`)
  }
  const checked = [...new Set(Object.keys(definition.schemas ?? {}).map((name) => fields.get(name)?.source))].filter(
    (source): source is Source => source !== undefined,
  )
  // an operation of several scopes: the tool's is the first (checked before the arguments), the others when it runs
  const scopes =
    operation.scope === undefined ? [] : Array.isArray(operation.scope) ? operation.scope : [operation.scope]
  const scope = definition.scope !== undefined ? definition.scope : (scopes[0] ?? null)
  const further = scopes.filter((s) => s !== scope)

  /** The operation's call made of a tool's arguments; the tool's own arguments apart. */
  const callOf = (ctx: ToolContext<S>, args: Record<string, unknown>) => {
    const call: OperationCall<Record<string, unknown>, Record<string, unknown>, Record<string, unknown> | undefined> = {
      tenant: ctx.tenant,
      params: { ...definition.fixed?.params },
      query: { ...definition.fixed?.query },
      body: operation.body ? { ...definition.fixed?.body } : undefined,
    }
    for (const more of further) requireScope(ctx.tenant, more)
    const extra: Record<string, unknown> = {}
    for (const [name, value] of Object.entries(args)) {
      const target = fields.get(name)
      if (!target) extra[name] = value
      else if (value !== undefined) (call[target.source] as Record<string, unknown>)[target.field] = value
    }
    // where the tool's own schema let a value through, the operation's rule decides (a 60-character tag against 40)
    for (const source of checked) call[source] = operationRule(operation[source], call[source], source) as never
    return { call: call as OperationCall, extra }
  }
  const method = operation.method
  const { preview, run } = definition
  const tool = defineTool<S, TObject>({
    name: definition.name,
    title: definition.title ?? operation.summary,
    description: definition.description,
    scope,
    permission: definition.permission ?? operation.permission,
    rest: definition.rest ?? restName(operation),
    input: Type.Object({ ...properties, ...definition.extra }),
    output: definition.output ?? (definition.ok ? withOk(operation.response) : (operation.response as TObject)),
    kind: definition.kind ?? (method === 'GET' ? 'read' : method === 'DELETE' ? 'destructive' : 'write'),
    idempotent: definition.idempotent ?? (method === 'PUT' || method === 'PATCH'),
    openWorld: definition.openWorld,
    preview: preview
      ? (ctx, args) => {
          const { call, extra } = callOf(ctx, args)
          return preview(ctx, call, extra)
        }
      : undefined,
    run: async (ctx, args) => {
      const { call, extra } = callOf(ctx, args)
      const answer = run ? await run(ctx, call, extra) : ((await operation.handle(ctx.services, call)) as object)
      return definition.ok ? { ok: true, ...answer } : (answer as Record<string, unknown>)
    },
  })
  return { ...tool, references }
}
