import { getAccount } from '../../platform/auth/accounts.service.ts'
import { AppError } from '../../platform/http/errors.ts'
import { OutboundError } from '../../platform/outbound-http.ts'
import type { AutomationsEngineDeps, Calling, CallResult } from './automations.ports.ts'

/** Outbound webhook steps are tried this many times (with the runner's backoff) before the run fails. */
const WEBHOOK_ATTEMPTS = 5

/** The external call of a step marked `sending`: its result, or an error worth retrying (webhooks). */
export async function callOut(deps: AutomationsEngineDeps, call: Calling): Promise<CallResult> {
  const { db, clock } = deps
  const { run, step, index, job } = call
  if (step.type === 'send_text') {
    const account = await getAccount(db, run.accountId)
    try {
      const result = await deps.messaging.send(
        { accountId: run.accountId, account },
        { contact_id: run.contactId ?? '', text: step.text },
      )
      return { ok: true, detail: { message_id: result.sent?.id ?? null } }
    } catch (error) {
      if (error instanceof AppError) {
        const key = typeof error.key === 'string' && error.key !== error.code ? `: ${error.key}` : ''
        return { ok: false, reason: `${error.code}${key}` }
      }
      throw error
    }
  }
  if (step.type === 'notify_team') {
    try {
      await deps.channels.sendEmail(run.accountId, { to: step.to.join(', '), subject: step.subject, text: step.text })
      return { ok: true }
    } catch (error) {
      if (error instanceof AppError) return { ok: false, reason: error.code }
      throw error
    }
  }
  const body = JSON.stringify({
    id: `automation.step:${run.id}:${index}`,
    event: 'automation.step',
    created_at: clock.now().toISOString(),
    data: {
      automation_id: run.automationId,
      run_id: run.id,
      contact_id: run.contactId,
      step: index,
      trigger: run.data,
    },
  })
  const timestamp = Math.floor(clock.now().getTime() / 1000)
  const secret = deps.secrets.open(call.automation.signingSecretSealed)
  try {
    const response = await deps.http.send(step.url, {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/json',
        'user-agent': deps.userAgent,
        'x-service-event': 'automation.step',
        'x-service-delivery': `automation.step:${run.id}:${index}`,
        'x-service-timestamp': String(timestamp),
        'x-service-signature': deps.sign(secret, timestamp, body),
      },
    })
    if (response.status >= 200 && response.status < 300) return { ok: true, detail: { status: response.status } }
    return { ok: false, reason: `http_${response.status}`, retry: job.attempts < WEBHOOK_ATTEMPTS }
  } catch (error) {
    if (error instanceof OutboundError) {
      return {
        ok: false,
        reason: error.code,
        retry: error.code !== 'blocked_target' && job.attempts < WEBHOOK_ATTEMPTS,
      }
    }
    throw error
  }
}
