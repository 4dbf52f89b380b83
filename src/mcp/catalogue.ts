import type { Tool } from './tool.ts'
import { accountTools } from './tools/account.ts'
import { appTools } from './tools/app.ts'
import { audienceTools } from './tools/audience.ts'
import { automationMoreTools } from './tools/automation-more.ts'
import { automationTools } from './tools/automations.ts'
import { contactTools } from './tools/contacts.ts'
import { contentTools } from './tools/content.ts'
import { conversationTools } from './tools/conversations.ts'
import { followupTools } from './tools/followups.ts'
import { inboxTools } from './tools/inbox.ts'
import { insightTools } from './tools/insights.ts'
import { libraryTools } from './tools/library.ts'
import { namedTools } from './tools/named.ts'
import { newsletterTools } from './tools/newsletters.ts'
import { statisticsTools } from './tools/statistics.ts'
import { teamTools } from './tools/team.ts'
import { webhookTools } from './tools/webhooks.ts'

/**
 * Every tool of the tool server, in the order tools/list shows them: the spec's fourteen named tools first, then one
 * tool per further REST operation of the modules built so far. Names are unique (checked by a test).
 */
export const catalogue: Tool[] = [
  ...namedTools,
  ...contactTools,
  ...audienceTools,
  ...inboxTools,
  ...conversationTools,
  ...contentTools,
  ...newsletterTools,
  ...automationTools,
  ...webhookTools,
  ...automationMoreTools,
  ...followupTools,
  ...libraryTools,
  ...insightTools,
  ...statisticsTools,
  ...appTools,
  ...teamTools,
  ...accountTools,
]
