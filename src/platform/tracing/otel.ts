// Loaded only when OTEL_EXPORTER_OTLP_ENDPOINT is set (tracing.ts imports it dynamically).
import {
  type Context,
  context,
  type Link,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  type TextMapSetter,
  trace,
} from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'
import type { FastifyInstance, FastifyRequest } from 'fastify'

const setter: TextMapSetter<Record<string, string>> = {
  set(carrier, key, value) {
    carrier[key] = value
  },
}
const getter: TextMapGetter<Record<string, string>> = {
  get: (carrier, key) => carrier[key],
  keys: (carrier) => Object.keys(carrier),
}

const REQUEST_SPAN = Symbol('herold.span')

/** What tracing.ts hands the rest of the process (it passes straight through while tracing is off). */
export interface Tracing {
  span<T>(name: string, attributes: Record<string, string | number>, run: () => Promise<T>, link?: string): Promise<T>
  /** the W3C traceparent of the active span, stored with a job so the job's span links back to it */
  traceparent(): string | undefined
  /** spans of a Fastify app's requests (their hooks, added only when tracing is on) */
  instrument(app: FastifyInstance): void
  shutdown(): Promise<void>
}

export function openTelemetry(options: { endpoint: string; serviceName: string }): Tracing {
  const manager = new AsyncLocalStorageContextManager()
  manager.enable()
  context.setGlobalContextManager(manager)
  const exporter = new OTLPTraceExporter({ url: `${options.endpoint}/v1/traces` })
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName }),
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: 1000 })],
  })
  const tracer = provider.getTracer('herold')
  const propagator = new W3CTraceContextPropagator()

  const linkTo = (traceparent: string | undefined): Link[] => {
    if (!traceparent) return []
    const parent = trace.getSpanContext(propagator.extract(context.active(), { traceparent }, getter))
    return parent ? [{ context: parent }] : []
  }

  const end = (span: Span, error?: unknown) => {
    if (error !== undefined) {
      span.recordException(error instanceof Error ? error : String(error))
      span.setStatus({ code: SpanStatusCode.ERROR })
    }
    span.end()
  }

  return {
    async span(name, attributes, run, link) {
      const span = tracer.startSpan(name, { attributes, links: linkTo(link) })
      try {
        const result = await context.with(trace.setSpan(context.active(), span), run)
        end(span)
        return result
      } catch (error) {
        end(span, error)
        throw error
      }
    },
    traceparent() {
      if (!trace.getSpan(context.active())) return undefined
      const carrier: Record<string, string> = {}
      propagator.inject(context.active(), carrier, setter)
      return carrier.traceparent
    },
    instrument(app) {
      type Traced = FastifyRequest & { [REQUEST_SPAN]?: { span: Span; context: Context } }
      app.addHook('onRequest', (request, _reply, done) => {
        const incoming = propagator.extract(context.active(), request.headers as Record<string, string>, getter)
        const span = tracer.startSpan(
          `${request.method}`,
          { kind: SpanKind.SERVER, attributes: { 'http.request.method': request.method } },
          incoming,
        )
        const spanContext = trace.setSpan(incoming, span)
        ;(request as Traced)[REQUEST_SPAN] = { span, context: spanContext }
        context.with(spanContext, done)
      })
      // the body is read in the socket's context: the handler runs in the request's span again from here
      app.addHook('preHandler', (request, _reply, done) => {
        const held = (request as Traced)[REQUEST_SPAN]
        if (held) context.with(held.context, done)
        else done()
      })
      app.addHook('onResponse', (request, reply, done) => {
        const held = (request as Traced)[REQUEST_SPAN]
        if (held) {
          const route = request.routeOptions.url ?? 'unmatched'
          held.span.updateName(`${request.method} ${route}`)
          held.span.setAttribute('http.route', route)
          held.span.setAttribute('http.response.status_code', reply.statusCode)
          if (reply.statusCode >= 500) held.span.setStatus({ code: SpanStatusCode.ERROR })
          held.span.end()
        }
        done()
      })
    },
    async shutdown() {
      await provider.shutdown().catch(() => {})
      context.disable()
    },
  }
}
