// Every Drizzle table of the application, for drizzle-kit and the typed client.
export * from '../auth/auth.tables.ts'
export * from '../events/events.tables.ts'
export * from '../jobs/jobs.tables.ts'
