// Every Drizzle table of the application, for drizzle-kit and the typed client.

export * from '../../modules/automations/automations.tables.ts'
export * from '../../modules/channels/channels.tables.ts'
export * from '../../modules/consent/consent.tables.ts'
export * from '../../modules/contacts/contacts.tables.ts'
export * from '../../modules/inbox/inbox.tables.ts'
export * from '../../modules/messaging/messaging.tables.ts'
export * from '../../modules/newsletters/newsletters.tables.ts'
export * from '../../modules/templates/templates.tables.ts'
export * from '../../modules/webhooks/webhooks.tables.ts'
export * from '../auth/auth.tables.ts'
export * from '../events/events.tables.ts'
export * from '../jobs/jobs.tables.ts'
