import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { enqueue } from '../../platform/jobs/jobs.ts'
import type { JobHandler } from '../../platform/jobs/runner.ts'
import type { ContactView } from '../contacts/index.ts'
import * as repo from './channels.repository.ts'
import type { ChannelsService } from './channels.service.ts'

// GDPR: when the end customer asked for the deletion, they get a confirmation. It goes by e-mail: the contact is
// gone, so there is no conversation to write into, and a chat number's 24-hour window may be closed.

export const DELETION_CONFIRMATION_QUEUE = 'channels.deletion_confirmation'

const TEXTS: Record<string, { subject: string; text: string }> = {
  de: {
    subject: 'Ihre Daten wurden gelöscht',
    text: 'Wie gewünscht haben wir Ihre Kontaktdaten und Ihre Nachrichten bei uns gelöscht. Sie erhalten von uns keine weiteren Nachrichten.',
  },
  en: {
    subject: 'Your data has been deleted',
    text: 'As you asked, we have deleted your contact details and your messages. You will not receive further messages from us.',
  },
}

export function deletionConfirmationText(language: string): { subject: string; text: string } {
  return TEXTS[language.slice(0, 2).toLowerCase()] ?? TEXTS.en
}

/**
 * Queues the confirmation in the deletion's transaction (it goes out after the commit, and survives a crash);
 * true when it will be sent: the contact had an e-mail address and the account has an e-mail channel.
 */
export async function queueDeletionConfirmation(
  tx: Db,
  clock: Clock,
  accountId: string,
  contact: ContactView,
): Promise<boolean> {
  if (!contact.email) return false
  const connection = await repo.connectionOf(tx, accountId, 'email')
  if (connection?.status !== 'connected') return false
  await enqueue(tx, clock, {
    accountId,
    queue: DELETION_CONFIRMATION_QUEUE,
    payload: { to: contact.email, language: contact.language },
  })
  return true
}

/** Sends a queued confirmation; a failure (mail server down, sending paused) is retried with backoff. */
export function deletionConfirmationHandler(channels: () => ChannelsService): JobHandler {
  return {
    async run(job) {
      const { to, language } = job.payload as { to: string; language: string }
      const result = await channels().sendEmail(job.accountId, { to, ...deletionConfirmationText(language) })
      if (!result.ok) throw new Error(`deletion confirmation not sent: ${JSON.stringify(result)}`)
    },
  }
}
