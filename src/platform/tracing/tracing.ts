import type { FastifyInstance } from 'fastify'
import type { Tracing } from './otel.ts'

/**
 * Traces (OpenTelemetry) when OTEL_EXPORTER_OTLP_ENDPOINT is set: spans for HTTP requests, database statements, job
 * runs and provider calls, a job's span linked to the span that enqueued it. Without the variable nothing of
 * OpenTelemetry is loaded: otel.ts is imported only by startTracing, and every function here passes straight through.
 */

let active: Tracing | null = null

/** Starts tracing to the OTLP/HTTP endpoint (loads the SDK); returns its stop, which flushes the last spans. */
export async function startTracing(options: { endpoint: string; serviceName: string }): Promise<() => Promise<void>> {
  if (active) return async () => {}
  const { openTelemetry } = await import('./otel.ts')
  const tracing = openTelemetry(options)
  active = tracing
  return async () => {
    if (active === tracing) active = null
    await tracing.shutdown()
  }
}

export function tracingOn(): boolean {
  return active !== null
}

/** Runs `run` in a span (a child of the active one; linked to `link`, a traceparent, when given). */
export function span<T>(
  name: string,
  attributes: Record<string, string | number>,
  run: () => Promise<T>,
  link?: string,
): Promise<T> {
  return active ? active.span(name, attributes, run, link) : run()
}

export function currentTraceparent(): string | undefined {
  return active?.traceparent()
}

export function instrumentRequests(app: FastifyInstance): void {
  active?.instrument(app)
}
