import type { FastifyInstance } from 'fastify'

/**
 * Traces (OpenTelemetry) when OTEL_EXPORTER_OTLP_ENDPOINT is set: spans for HTTP requests, database statements, job
 * runs and provider calls, a job's span linked to the span that enqueued it. Without the variable nothing of
 * OpenTelemetry is loaded: otel.ts is imported only by startTracing, and every function here passes straight through.
 */
export interface Tracing {
  span<T>(name: string, attributes: Record<string, string | number>, run: () => Promise<T>, link?: string): Promise<T>
  /** the W3C traceparent of the active span, stored with a job so the job's span links back to it */
  traceparent(): string | undefined
  /** spans of a Fastify app's requests (their hooks, added only when tracing is on) */
  instrument(app: FastifyInstance): void
  shutdown(): Promise<void>
}

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
