import { v1 } from '../../api/client.ts'
import { type Answer, apiQuery, firstPage } from '../../ui/query.ts'

export const newslettersQuery = apiQuery(['newsletters'], () =>
  v1.GET('/v1/newsletters', { params: { query: firstPage(100) } }),
)

export const newsletterStatusQuery = (id: string) =>
  apiQuery(['newsletter-status', id], () => v1.GET('/v1/newsletters/{id}/status', { params: { path: { id } } }))

export const newsletterQuery = (id: string) =>
  apiQuery(['newsletter', id], () => v1.GET('/v1/newsletters/{id}', { params: { path: { id } } }))

/** A newsletter as GET /v1/newsletters/{id} answers (and every change of it). */
export type NewsletterData = Answer<ReturnType<typeof newsletterQuery>>

/** The first 100 send records of a newsletter (its recipients once it started), with status and reason. */
export const newsletterRecipientsQuery = (id: string) =>
  apiQuery(['newsletter-recipients', id], () =>
    v1.GET('/v1/newsletters/{id}/recipients', { params: { path: { id }, query: firstPage(100) } }),
  )
