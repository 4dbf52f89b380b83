import { accountModule } from './account/index.ts'
import { automationsModule } from './automations/index.ts'
import { channelsModule } from './channels/index.ts'
import { consentModule } from './consent/index.ts'
import { contactsModule } from './contacts/index.ts'
import { followupsModule } from './followups/index.ts'
import { inboxModule } from './inbox/index.ts'
import { knowledgeModule } from './knowledge/index.ts'
import { mediaModule } from './media/index.ts'
import { messagingModule } from './messaging/index.ts'
import { newslettersModule } from './newsletters/index.ts'
import { peopleModule } from './people/index.ts'
import { repliesModule } from './replies/index.ts'
import { statsModule } from './stats/index.ts'
import { templatesModule } from './templates/index.ts'
import { webhooksModule } from './webhooks/index.ts'

/**
 * Every module, in mounting order. Each declares what it needs of the built services; src/services.ts checks that the
 * composition root gives every module what it declares.
 */
export const modules = [
  accountModule,
  contactsModule,
  templatesModule,
  webhooksModule,
  inboxModule,
  channelsModule,
  messagingModule,
  consentModule,
  automationsModule,
  newslettersModule,
  followupsModule,
  statsModule,
  mediaModule,
  knowledgeModule,
  peopleModule,
  repliesModule,
]
