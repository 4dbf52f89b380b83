import { type TObject, type TProperties, type TSchema, Type } from 'typebox'
import { MeResponse } from '../modules/account/account.schemas.ts'
import { AccountSettings, Usage } from '../modules/account/account.service.ts'
import { CheckResponse as AutomationCheckResponse } from '../modules/automations/automations.app.ts'
import { BuildingBlocks } from '../modules/automations/automations.blocks.ts'
import * as automations from '../modules/automations/automations.schemas.ts'
import { ChatStatus } from '../modules/channels/channels.app.ts'
import * as channels from '../modules/channels/channels.schemas.ts'
import { OptinRequestResponse, OptOutResponse } from '../modules/consent/consent.app.ts'
import { ConsentSettings } from '../modules/consent/consent.schemas.ts'
import {
  BulkDeleteResponse,
  BulkTagResponse,
  BulkUntagResponse,
  ConsentChange,
  DeleteTagResponse,
  ImportReportSchema,
  MatchingResponse,
  RenameTagResponse,
  TagInfo,
} from '../modules/contacts/contacts.app.ts'
import * as contacts from '../modules/contacts/contacts.schemas.ts'
import * as followups from '../modules/followups/followups.schemas.ts'
import { ActivityResponse, ConversationResponse, MessageDetail } from '../modules/inbox/inbox.app.ts'
import * as inbox from '../modules/inbox/inbox.schemas.ts'
import { AskResponse, PassagesResponse } from '../modules/knowledge/knowledge.app.ts'
import * as knowledge from '../modules/knowledge/knowledge.schemas.ts'
import * as media from '../modules/media/media.schemas.ts'
import * as messaging from '../modules/messaging/messaging.schemas.ts'
import * as newsletters from '../modules/newsletters/newsletters.schemas.ts'
import * as people from '../modules/people/people.schemas.ts'
import * as stats from '../modules/stats/stats.schemas.ts'
import { CheckResponse as TemplateCheckResponse } from '../modules/templates/templates.app.ts'
import * as templates from '../modules/templates/templates.schemas.ts'
import * as webhooks from '../modules/webhooks/webhooks.schemas.ts'
import { GERMAN_TO_ENGLISH } from '../platform/http/serializer.ts'

/**
 * The output schemas of the tools (MCP outputSchema): the REST operation's own response schema wherever the tool
 * answers what REST answers, so a tool's structuredContent and the REST body are described by one schema.
 */

/** The REST schemas other schemas name with Type.Ref (registered with app.addSchema by their modules). */
const REGISTERED: Record<string, TSchema> = Object.fromEntries(
  [
    contacts.Contact,
    contacts.ContactTag,
    contacts.TagCount,
    media.MediaItem,
    templates.TemplateButton,
    templates.HeaderMedia,
    templates.TemplateIssue,
    templates.Template,
    templates.TemplateDetail,
  ].map((schema) => [(schema as unknown as { $id: string }).$id, schema]),
)

const GERMAN = new Set(Object.keys(GERMAN_TO_ENGLISH))

/**
 * A schema as plain JSON for a client: the REST schemas' references resolved and their $id names dropped (one output
 * schema embeds an entity more than once, and a client compiles all of them with one validator, where a repeated $id
 * is an error); the deprecated German aliases, which REST adds and a tool's answer may lack, are not required.
 */
export function plainSchema(schema: unknown): Record<string, unknown> {
  const resolve = (value: unknown, depth: number): unknown => {
    if (Array.isArray(value)) return value.map((v) => resolve(v, depth))
    if (value === null || typeof value !== 'object') return value
    const node = value as Record<string, unknown>
    if (typeof node.$ref === 'string' && REGISTERED[node.$ref] && depth < 10) {
      return resolve(REGISTERED[node.$ref], depth + 1)
    }
    const out: Record<string, unknown> = {}
    for (const [key, inner] of Object.entries(node)) {
      if (key === '$id') continue
      if (key === 'required' && Array.isArray(inner)) {
        out.required = inner.filter((name) => !GERMAN.has(name as string))
        continue
      }
      out[key] = key === 'properties' ? resolveProperties(inner, depth) : resolve(inner, depth)
    }
    return out
  }
  const resolveProperties = (properties: unknown, depth: number) =>
    Object.fromEntries(Object.entries(properties as Record<string, unknown>).map(([k, v]) => [k, resolve(v, depth)]))
  return JSON.parse(JSON.stringify(resolve(schema, 0)))
}

const obj = (properties: TProperties, description?: string) =>
  Type.Object(properties, description ? { description } : {})
const ok = { ok: Type.Boolean() }
const withOk = (schema: TObject) => obj({ ...ok, ...schema.properties })

const Assistant = Type.Object({
  id: Type.String({ format: 'uuid', description: 'the grant id' }),
  client_id: Type.String(),
  client_name: Type.String(),
  scopes: Type.Array(Type.String()),
  resource: Type.String({ description: 'the tool server the tokens are bound to' }),
  approved_by: Type.Union([
    Type.Object({ id: Type.String({ format: 'uuid' }), name: Type.String(), email: Type.String() }),
    Type.Null(),
  ]),
  approved_at: Type.String({ format: 'date-time' }),
  last_token_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
})

export const out = {
  // contacts
  get_account: MeResponse,
  search_contacts: contacts.ListResponse,
  list_contacts: contacts.ListResponse,
  get_contact: contacts.ContactResponse,
  create_contact: contacts.CreatedResponse,
  upsert_contact: contacts.CreatedResponse,
  update_contact: contacts.UpdatedResponse,
  clear_contact_field: contacts.UpdatedResponse,
  add_contact_tag: contacts.AddTagsResponse,
  add_contact_tags: contacts.AddTagsResponse,
  remove_contact_tag: contacts.RemoveTagResponse,
  list_tags: contacts.TagCountsResponse,
  delete_contact: contacts.DeleteResponse,
  // messages and inbox
  send_message: obj(
    {
      sent: Type.Boolean({ description: 'true: the message went out (message); false: it was queued (send_id)' }),
      message: Type.Optional(inbox.Message),
      send_id: Type.Optional(Type.String({ format: 'uuid' })),
      status: Type.Optional(Type.String()),
    },
    'POST /messages: the sent message (201), or the queued send (202)',
  ),
  send_template: obj(
    {
      queued: Type.Boolean({ description: 'true: queued with send_id (read it with get_send_status)' }),
      send_id: Type.Optional(Type.String({ format: 'uuid' })),
      status: Type.Optional(Type.String()),
      message: Type.Optional(inbox.Message),
    },
    'POST /messages with a template: the queued send (202)',
  ),
  get_send_status: messaging.SendRecord,
  list_conversations: inbox.ConversationPage,
  get_conversation_messages: inbox.HistoryPage,
  list_messages: inbox.MessagePage,
  simulate_inbound_message: withOk(channels.InboundResult),
  get_channel_settings: channels.ChannelsSettings,
  get_coexistence: channels.Coexistence,
  set_coexistence: channels.Coexistence,
  get_consent_settings: ConsentSettings,
  update_consent_settings: ConsentSettings,
  // templates and newsletters
  list_templates: templates.ListResponse,
  filter_templates: templates.ListResponse,
  get_template: templates.TemplateResponse,
  create_template: templates.CreatedResponse,
  create_template_with_options: templates.CreatedResponse,
  update_template: templates.UpdatedResponse,
  submit_template: templates.SubmitResponse,
  delete_template: templates.DeleteResponse,
  duplicate_template: templates.CreatedResponse,
  preview_template: templates.PreviewResponse,
  refresh_template_status: templates.RefreshResponse,
  list_template_sends: templates.SendsPage,
  list_template_usages: templates.UsagesResponse,
  list_newsletters: newsletters.NewsletterPage,
  create_newsletter: newsletters.NewsletterResponse,
  get_newsletter: newsletters.NewsletterResponse,
  update_newsletter: newsletters.NewsletterResponse,
  schedule_newsletter: newsletters.NewsletterResponse,
  cancel_newsletter: newsletters.NewsletterResponse,
  delete_newsletter: newsletters.Deleted,
  get_newsletter_status: newsletters.StatusResponse,
  duplicate_newsletter: newsletters.NewsletterResponse,
  preview_newsletter: newsletters.PreviewResponse,
  estimate_newsletter_recipients: newsletters.EstimateResponse,
  list_newsletter_recipients: newsletters.RecipientPage,
  list_newsletter_clicks: newsletters.ClickPage,
  update_newsletter_content: newsletters.NewsletterResponse,
  get_newsletter_statistics: newsletters.NewsletterStatistics,
  check_newsletter: newsletters.CheckResponse,
  // automations and webhooks
  list_automations: automations.AutomationPage,
  get_automation: automations.Automation,
  create_automation: automations.CreatedAutomation,
  update_automation: automations.Automation,
  activate_automation: automations.Automation,
  pause_automation: automations.Automation,
  trigger_automation: automations.TriggeredRun,
  delete_automation: obj({ id: Type.String({ format: 'uuid' }), deleted: Type.Literal(true) }),
  list_automation_runs: automations.RunPage,
  get_automation_run: automations.Run,
  duplicate_automation: automations.CreatedAutomation,
  cancel_automation_run: automations.Run,
  list_automation_building_blocks: BuildingBlocks,
  list_automation_webhooks: automations.AutomationWebhookPage,
  create_webhook_subscription: webhooks.SubscriptionWithSecret,
  list_webhook_subscriptions: webhooks.SubscriptionPage,
  get_webhook_subscription: webhooks.Subscription,
  delete_webhook_subscription: webhooks.DeletedSubscription,
  enable_webhook_subscription: webhooks.Subscription,
  rotate_webhook_secret: webhooks.SubscriptionWithSecret,
  list_webhook_deliveries: webhooks.DeliveryAttemptPage,
  // follow-ups
  list_followups: followups.FollowupPage,
  get_followup: followups.FollowupResponse,
  create_followup: withOk(followups.FollowupResponse),
  activate_followup: withOk(followups.FollowupResponse),
  pause_followup: withOk(followups.FollowupResponse),
  rename_followup: withOk(followups.FollowupResponse),
  update_followup_step: withOk(followups.FollowupResponse),
  get_followup_timing: followups.Timing,
  update_followup_timing: withOk(followups.Timing),
  list_followup_enrollments: followups.EnrollmentPage,
  enroll_contact_in_followup: followups.EnrollmentResponse,
  stop_followup_enrollment: followups.EnrollmentResponse,
  duplicate_followup: withOk(followups.FollowupResponse),
  set_followup_trigger: withOk(followups.FollowupResponse),
  remove_followup_step: withOk(followups.FollowupResponse),
  move_followup_step: withOk(followups.FollowupResponse),
  // media and knowledge
  list_media: media.MediaPage,
  get_media: media.MediaResponse,
  upload_media_from_url: withOk(media.MediaResponse),
  delete_media: media.Deleted,
  update_media: media.MediaResponse,
  list_media_usages: media.UsagesResponse,
  get_knowledge_document: knowledge.DocumentResponse,
  rename_knowledge_document: knowledge.DocumentResponse,
  refresh_knowledge_document: knowledge.RefreshResponse,
  list_knowledge_documents: knowledge.DocumentPage,
  search_knowledge: knowledge.SearchResponse,
  add_knowledge_document_from_url: withOk(knowledge.DocumentResponse),
  add_knowledge_document_from_text: withOk(knowledge.DocumentResponse),
  delete_knowledge_document: knowledge.Deleted,
  get_ai_settings: knowledge.AiSettings,
  update_ai_settings: withOk(knowledge.AiSettings),
  list_ai_replies: knowledge.AiReplyPage,
  // the web app's functions
  get_contact_consent_history: obj({ history: Type.Array(ConsentChange) }),
  import_contacts_csv: obj({ ...ok, report: ImportReportSchema }),
  check_template: TemplateCheckResponse,
  check_followup_step_text: followups.CheckResponse,
  add_followup_step: withOk(followups.FollowupResponse),
  get_knowledge_document_passages: PassagesResponse,
  ask_knowledge_test_question: AskResponse,
  check_automation: AutomationCheckResponse,
  // team and statistics
  list_team_members: people.TeamPage,
  get_team_member: people.MemberResponse,
  invite_team_member: people.InviteResponse,
  change_team_member_role: people.MemberResponse,
  remove_team_member: people.MemberResponse,
  list_api_keys: people.KeysResponse,
  create_api_key: people.KeyCreated,
  revoke_api_key: people.KeyResponse,
  list_connected_assistants: obj({ assistants: Type.Array(Assistant) }),
  disconnect_assistant: obj({ ...ok, assistant: Assistant }),
  get_statistics: stats.StatsResponse,
  // the audience: lookup, counts, export, tags account-wide, bulk changes, consent requests
  find_contact: contacts.ContactResponse,
  count_contacts: MatchingResponse,
  export_contacts_csv: obj({
    csv: Type.String({ description: 'the CSV text, header line first' }),
    rows: Type.Integer({ description: 'contacts in this page' }),
    has_more: Type.Boolean(),
    next_offset: Type.Union([Type.Integer(), Type.Null()]),
  }),
  get_tag: obj({ tag: TagInfo }),
  rename_tag: RenameTagResponse,
  delete_tag: DeleteTagResponse,
  tag_contacts: BulkTagResponse,
  untag_contacts: BulkUntagResponse,
  delete_contacts: BulkDeleteResponse,
  request_contact_optin: OptinRequestResponse,
  record_contact_opt_out: OptOutResponse,
  // handling conversations
  get_conversation: ConversationResponse,
  close_conversation: ConversationResponse,
  reopen_conversation: ConversationResponse,
  assign_conversation: ConversationResponse,
  mark_conversation_read: ConversationResponse,
  get_message: obj({ message: MessageDetail }),
  get_contact_activity: ActivityResponse,
  // webhook subscriptions and deliveries
  list_webhook_event_types: webhooks.EventTypes,
  update_webhook_subscription: webhooks.Subscription,
  disable_webhook_subscription: webhooks.Subscription,
  send_test_webhook_event: webhooks.TestEventResponse,
  get_webhook_delivery: obj({ delivery: webhooks.Delivery }),
  redeliver_webhook_delivery: obj({ delivery: webhooks.Delivery }),
  // the account, its usage and its chat number
  get_account_settings: obj({ account: AccountSettings }),
  update_account_settings: obj({ account: AccountSettings }),
  get_usage: Usage,
  get_chat_channel_status: ChatStatus,
  // invitations and keys
  resend_invitation: people.InviteResponse,
  get_api_key: people.KeyResponse,
  update_api_key: people.KeyResponse,
  get_template_statistics: templates.TemplateStatistics,
  get_followup_statistics: followups.FollowupStatistics,
  get_automation_statistics: automations.AutomationStatistics,
} satisfies Record<string, TObject>
