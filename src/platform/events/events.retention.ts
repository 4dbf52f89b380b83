import type { Retention } from '../db/maintenance.ts'

/** Events are kept (never deleted by retention), but written all day: they need vacuuming and fresh statistics. */
export const eventsRetention: Retention = { churn: ['events'] }
