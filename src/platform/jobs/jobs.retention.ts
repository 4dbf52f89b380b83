import type { Retention } from '../db/maintenance.ts'

/** The job queue's upkeep: dead jobs go after the retention period; the queue's rows churn all day. */
export const jobsRetention: Retention = {
  deletes: [{ table: 'jobs', statement: "DELETE FROM jobs WHERE state = 'dead' AND run_at < $1", cutoff: 'retention' }],
  churn: ['jobs'],
}
