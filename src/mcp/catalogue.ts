import { modules } from '../modules/index.ts'
import type { Tool } from '../platform/tools/tool.ts'
import { assistantTools } from './assistants.tools.ts'

/**
 * The order tools/list shows the tools in (and docs/tool-server.md): the spec's fourteen named tools first, then the
 * further REST operations by topic. Each tool lives in the module whose REST operation it stands for.
 */
// biome-ignore format: several names a line, grouped by topic
const ORDER = [
  // the spec's fourteen named tools
  'search_contacts', 'get_contact', 'create_contact', 'update_contact', 'add_contact_tag', 'send_message',
  'send_template', 'get_send_status', 'list_conversations', 'get_conversation_messages', 'list_newsletters',
  'schedule_newsletter', 'list_templates', 'create_template',
  // contacts and tags
  'get_account', 'list_contacts', 'upsert_contact', 'clear_contact_field', 'add_contact_tags', 'remove_contact_tag',
  'list_tags', 'delete_contact',
  // custom fields of contacts
  'list_contact_fields', 'create_contact_field', 'update_contact_field', 'delete_contact_field',
  // the audience: lookup, counts, export, tags account-wide, bulk changes, consent requests
  'find_contact', 'count_contacts', 'export_contacts_csv', 'get_tag', 'rename_tag', 'delete_tag', 'tag_contacts',
  'untag_contacts', 'delete_contacts', 'request_contact_optin', 'record_contact_opt_out',
  // messages, the sandbox, channel, consent and sending settings
  'list_messages', 'simulate_inbound_message', 'get_channel_settings', 'get_coexistence', 'set_coexistence',
  'get_consent_settings', 'update_consent_settings', 'get_sending_settings', 'update_sending_settings',
  // handling conversations
  'list_inbox', 'get_inbox_counts', 'get_conversation', 'close_conversation', 'reopen_conversation',
  'snooze_conversation', 'assign_conversation', 'mark_conversation_read', 'get_message', 'get_contact_activity',
  // the team's internal notes and @mentions
  'add_conversation_note', 'list_mentions',
  // the inbox's routing: automatic assignment, opening hours and the away message, members' availability
  'get_inbox_routing', 'update_assignment_settings', 'update_opening_hours', 'list_member_availability',
  'set_member_availability',
  // saved replies: managed, rendered for a contact, sent
  'list_saved_replies', 'get_saved_reply', 'create_saved_reply', 'update_saved_reply', 'delete_saved_reply',
  'render_saved_reply', 'send_saved_reply',
  // templates and newsletters
  'filter_templates', 'get_template', 'create_template_with_options', 'update_template', 'submit_template',
  'delete_template', 'duplicate_template', 'preview_template', 'refresh_template_status', 'list_template_sends',
  'list_template_usages', 'create_newsletter', 'get_newsletter', 'update_newsletter', 'delete_newsletter',
  'cancel_newsletter', 'get_newsletter_status',
  // newsletters beyond their basics
  'duplicate_newsletter', 'update_newsletter_content', 'preview_newsletter', 'estimate_newsletter_recipients',
  'list_newsletter_recipients', 'list_newsletter_clicks', 'get_newsletter_statistics', 'check_newsletter',
  // automations and webhook subscriptions
  'list_automations', 'get_automation', 'create_automation', 'update_automation', 'activate_automation',
  'pause_automation', 'trigger_automation', 'delete_automation', 'list_automation_runs', 'get_automation_run',
  'list_automation_webhooks', 'create_webhook_subscription', 'list_webhook_subscriptions', 'get_webhook_subscription',
  'delete_webhook_subscription', 'enable_webhook_subscription', 'rotate_webhook_secret', 'list_webhook_deliveries',
  // webhook subscriptions and deliveries
  'list_webhook_event_types', 'update_webhook_subscription', 'disable_webhook_subscription', 'send_test_webhook_event',
  'get_webhook_delivery', 'redeliver_webhook_delivery',
  // automations beyond their basics
  'duplicate_automation', 'cancel_automation_run', 'list_automation_building_blocks',
  // follow-ups
  'list_followups', 'get_followup', 'create_followup', 'activate_followup', 'pause_followup', 'rename_followup',
  'update_followup_step', 'get_followup_timing', 'update_followup_timing', 'list_followup_enrollments',
  'enroll_contact_in_followup', 'stop_followup_enrollment', 'duplicate_followup', 'set_followup_trigger',
  'remove_followup_step', 'move_followup_step',
  // media and knowledge
  'list_media', 'get_media', 'upload_media_from_url', 'delete_media', 'update_media', 'list_media_usages',
  'list_knowledge_documents', 'get_knowledge_document', 'rename_knowledge_document', 'refresh_knowledge_document',
  'search_knowledge', 'add_knowledge_document_from_url', 'add_knowledge_document_from_text',
  'delete_knowledge_document', 'get_ai_settings', 'update_ai_settings', 'list_ai_replies',
  // the team and statistics
  'list_team_members', 'get_statistics',
  // statistics per template, follow-up and automation
  'get_template_statistics', 'get_followup_statistics', 'get_automation_statistics',
  // the web app's functions
  'get_contact_consent_history', 'import_contacts_csv', 'check_template', 'check_followup_step_text',
  'add_followup_step', 'get_knowledge_document_passages', 'ask_knowledge_test_question', 'check_automation',
  // the team, keys and assistants
  'get_team_member', 'invite_team_member', 'change_team_member_role', 'remove_team_member', 'resend_invitation',
  'list_api_keys', 'get_api_key', 'create_api_key', 'update_api_key', 'revoke_api_key', 'list_connected_assistants',
  'disconnect_assistant',
  // the account, its usage and its chat number
  'get_account_settings', 'update_account_settings', 'get_usage', 'get_chat_channel_status',
]

/** Every module's tools and the tool server's own, in the catalogue's order; a tool missing from ORDER fails here. */
function catalogueOf(tools: Tool[]): Tool[] {
  const byName = new Map(tools.map((tool) => [tool.name, tool]))
  if (byName.size !== tools.length) throw new Error('two tools share a name')
  const unlisted = tools.filter((tool) => !ORDER.includes(tool.name)).map((tool) => tool.name)
  const missing = ORDER.filter((name) => !byName.has(name))
  if (unlisted.length > 0 || missing.length > 0) {
    throw new Error(`ORDER names tools no module has [${missing.join(', ')}] and lacks [${unlisted.join(', ')}]`)
  }
  return ORDER.map((name) => byName.get(name) as Tool)
}

/** Every tool of the tool server. Names are unique (checked by a test). */
export const catalogue: Tool[] = catalogueOf([...modules.flatMap((module) => module.tools ?? []), ...assistantTools])
