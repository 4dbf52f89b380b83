import { queryOptions } from '@tanstack/react-query'
import { call, v1 } from '../../api/client.ts'

export const newslettersQuery = queryOptions({
  queryKey: ['newsletters'],
  queryFn: () => call(v1.GET('/v1/newsletters', { params: { query: { limit: 100, offset: 0 } } })),
})

export const newsletterStatusQuery = (id: string) =>
  queryOptions({
    queryKey: ['newsletter-status', id],
    queryFn: () => call(v1.GET('/v1/newsletters/{id}/status', { params: { path: { id } } })),
    // counts move while it sends: look again every two seconds until it is done; after that delivery and read
    // receipts and clicks still come in, so every ten seconds while the page is open,
  })

export const newsletterQuery = (id: string) =>
  queryOptions({
    queryKey: ['newsletter', id],
    queryFn: () => call(v1.GET('/v1/newsletters/{id}', { params: { path: { id } } })),
    // the estimate follows the contacts; the status moves by itself while it is scheduled or sending,
  })

/** A newsletter as GET /v1/newsletters/{id} answers (and every change of it). */
export type NewsletterData = Awaited<ReturnType<ReturnType<typeof newsletterQuery>['queryFn'] & {}>>
