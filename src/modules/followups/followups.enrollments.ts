import { sql } from 'drizzle-orm'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { toPage } from '../../platform/http/pagination.ts'
import { enrollmentView, type FollowupsCore, type FollowupsDeps, type FollowupsTenant } from './followups.core.ts'
import { enrollContact, stopActive } from './followups.enrollment.ts'
import * as repo from './followups.repository.ts'
import { UUID } from './followups.repository.ts'
import type { EnrollmentStatus } from './followups.tables.ts'

/** A sequence's enrollments: listing, enrolling a contact by hand, stopping one. */
export function followupEnrollments(deps: FollowupsDeps, core: FollowupsCore) {
  const { db, clock } = deps
  const { enrollmentRow, require } = core
  return {
    /** GET /followups/{id}/enrollments: the contacts in a sequence, newest enrollment first, by status or contact. */
    async enrollments(
      tenant: FollowupsTenant,
      id: string,
      query: { status?: EnrollmentStatus; contact_id?: string; limit: number; offset: number },
    ) {
      const sequence = await require(db, tenant.accountId, id)
      if (query.contact_id !== undefined && !UUID.test(query.contact_id)) throw badRequest('contact_id must be a uuid')
      const found = await repo.enrollmentsPage(db, tenant.accountId, sequence.id, query)
      const page = toPage(found, query.limit, query.offset)
      return { ...page, items: page.items.map(enrollmentView) }
    },

    /**
     * POST /followups/{id}/enrollments: enrolls one contact by hand, its first step counted from now. The sequence must
     * be active and the contact's chat opt-in confirmed; a contact enrolled already is a 409.
     */
    /** The rules of enroll, checked without enrolling (the tool's preview): 404, 400 or 409 as enroll answers. */
    async checkEnrollment(tenant: FollowupsTenant, id: string, contactId: string) {
      const sequence = await require(db, tenant.accountId, id)
      if (!UUID.test(contactId)) throw notFound('contact')
      const contact = await repo.contactForEnrollment(db, tenant.accountId, sequence.id, contactId)
      if (!contact) throw notFound('contact')
      if (contact.optin_chat !== 'confirmed') {
        throw badRequest(
          'Only a contact whose chat opt-in is confirmed can be enrolled',
          'followup_contact_not_confirmed',
        )
      }
      if (sequence.status !== 'active') {
        throw new AppError(409, 'followup_not_active', 'The sequence is not active: activate it first', {
          key: 'followup_not_active',
        })
      }
      if (contact.enrolled === true || contact.enrolled === 't') {
        throw new AppError(409, 'followup_already_enrolled', 'The contact is enrolled in this sequence already', {
          key: 'followup_already_enrolled',
        })
      }
      return { sequence_id: sequence.id, contact_id: contactId, optin_chat: contact.optin_chat }
    },

    async enroll(tenant: FollowupsTenant, id: string, contactId: string) {
      await this.checkEnrollment(tenant, id, contactId)
      const outcome = await db.transaction((tx) =>
        enrollContact(tx, clock, { accountId: tenant.accountId, sequenceId: id, contactId }),
      )
      if (!outcome.enrolled) {
        if (outcome.reason === 'already_enrolled') {
          throw new AppError(409, 'followup_already_enrolled', 'The contact is enrolled in this sequence already', {
            key: 'followup_already_enrolled',
          })
        }
        if (outcome.reason === 'sequence_not_active') {
          throw new AppError(409, 'followup_not_active', 'The sequence is not active: activate it first', {
            key: 'followup_not_active',
          })
        }
        throw badRequest('The sequence has no step whose time lies ahead', 'followup_no_steps')
      }
      return enrollmentView(await enrollmentRow(tenant.accountId, id, outcome.enrollment_id as string))
    },

    /** POST /followups/{id}/enrollments/{enrollment_id}/stop: the contact gets no further step of this sequence. */
    async stopEnrollment(tenant: FollowupsTenant, id: string, enrollmentId: string) {
      await require(db, tenant.accountId, id)
      if (!UUID.test(enrollmentId)) throw notFound('enrollment')
      const current = await enrollmentRow(tenant.accountId, id, enrollmentId)
      if (current.status === 'active') {
        const now = clock.now()
        await db.transaction((tx) =>
          stopActive(tx, tenant.accountId, sql`e.id = ${enrollmentId}`, {
            reason: 'stopped_by_user',
            now,
            finished: true,
          }),
        )
      }
      return enrollmentView(await enrollmentRow(tenant.accountId, id, enrollmentId))
    },
  }
}
