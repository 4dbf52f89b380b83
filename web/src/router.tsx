import type { QueryClient } from '@tanstack/react-query'
import {
  createRootRouteWithContext,
  createRoute,
  createRouter,
  lazyRouteComponent,
  type RouteComponent,
  redirect,
} from '@tanstack/react-router'
import type { ReactNode } from 'react'
import {
  InvitationPage,
  ResetCompletePage,
  ResetRequestPage,
  SetupPage,
  SignInPage,
} from './features/auth/auth-pages.tsx'
import { Layout, Loading, SignedInLayout } from './ui/layout.tsx'
import { sessionQuery, useSignedIn } from './ui/session.ts'

// The signed-in pages and the consent page load their code when first opened (one file per feature), so the sign-in
// page loads without them. The router loads a page's file before it shows the route (the components' `preload`).
const page = lazyRouteComponent
const AccountPage = page(() => import('./features/account/account-page.tsx'), 'AccountPage')
const AutomationPage = page(() => import('./features/automations/automations-pages.tsx'), 'AutomationPage')
const AutomationsPage = page(() => import('./features/automations/automations-pages.tsx'), 'AutomationsPage')
const ConsentPage = page(() => import('./features/consent/consent-page.tsx'), 'ConsentPage')
const ContactPage = page(() => import('./features/contacts/contacts-pages.tsx'), 'ContactPage')
const ContactsPage = page(() => import('./features/contacts/contacts-pages.tsx'), 'ContactsPage')
const DashboardPage = page(() => import('./features/dashboard/dashboard-page.tsx'), 'DashboardPage')
const FollowupPage = page(() => import('./features/followups/followups-pages.tsx'), 'FollowupPage')
const FollowupsPage = page(() => import('./features/followups/followups-pages.tsx'), 'FollowupsPage')
const InboxPage = page(() => import('./features/inbox/inbox-page.tsx'), 'InboxPage')
const KnowledgePage = page(() => import('./features/knowledge/knowledge-page.tsx'), 'KnowledgePage')
const MediaPage = page(() => import('./features/media/media-page.tsx'), 'MediaPage')
const NewsletterPage = page(() => import('./features/newsletters/newsletters-pages.tsx'), 'NewsletterPage')
const NewslettersPage = page(() => import('./features/newsletters/newsletters-pages.tsx'), 'NewslettersPage')
const KeysPage = page(() => import('./features/people/keys-page.tsx'), 'KeysPage')
const TeamPage = page(() => import('./features/people/team-page.tsx'), 'TeamPage')
const SettingsPage = page(() => import('./features/settings/settings-page.tsx'), 'SettingsPage')
const TemplatePage = page(() => import('./features/templates/templates-pages.tsx'), 'TemplatePage')
const TemplatesPage = page(() => import('./features/templates/templates-pages.tsx'), 'TemplatesPage')
const WebhooksPage = page(() => import('./features/webhooks/webhooks-page.tsx'), 'WebhooksPage')

/** A route component that draws a lazily loaded page with the route's values: it preloads as the page does. */
const drawing = (lazy: Pick<RouteComponent, 'preload'>, draw: () => ReactNode) =>
  Object.assign(draw, { preload: lazy.preload })

const root = createRootRouteWithContext<{ queryClient: QueryClient }>()({ component: Layout })

// the pages anyone may open: signing in and the links of e-mails
const signInRoute = createRoute({ getParentRoute: () => root, path: '/sign-in', component: SignInPage })
const setupRoute = createRoute({
  getParentRoute: () => root,
  path: '/setup/$token',
  component: () => <SetupPage token={setupRoute.useParams().token} />,
})
const invitationRoute = createRoute({
  getParentRoute: () => root,
  path: '/invitations/$token',
  component: () => <InvitationPage token={invitationRoute.useParams().token} />,
})
const resetRequestRoute = createRoute({ getParentRoute: () => root, path: '/reset', component: ResetRequestPage })
const resetRoute = createRoute({
  getParentRoute: () => root,
  path: '/reset/$token',
  component: () => <ResetCompletePage token={resetRoute.useParams().token} />,
})
// the consent page signs in by itself, to come back to the same question
const consentRoute = createRoute({ getParentRoute: () => root, path: '/consent', component: ConsentPage })

/** Every other page needs a member: without a session, the sign-in page. */
const signedIn = createRoute({
  getParentRoute: () => root,
  id: 'signed-in',
  beforeLoad: async ({ context }) => {
    const session = await context.queryClient.ensureQueryData(sessionQuery).catch(() => null)
    if (!session) throw redirect({ to: '/sign-in' })
  },
  pendingComponent: Loading,
  component: SignedInLayout,
})
const signedInPage = <P extends string>(path: P, component: RouteComponent) =>
  createRoute({ getParentRoute: () => signedIn, path, component })

const dashboardRoute = signedInPage('/', DashboardPage)
const contactsRoute = signedInPage('/contacts', ContactsPage)
const contactRoute = signedInPage(
  '/contacts/$id',
  drawing(ContactPage, () => <ContactPage id={contactRoute.useParams().id} />),
)
const inboxRoute = signedInPage(
  '/inbox',
  drawing(InboxPage, () => <InboxPage session={useSignedIn()} />),
)
const conversationRoute = signedInPage(
  '/inbox/$id',
  drawing(InboxPage, () => <InboxPage id={conversationRoute.useParams().id} session={useSignedIn()} />),
)
const templatesRoute = signedInPage(
  '/templates',
  drawing(TemplatesPage, () => <TemplatesPage session={useSignedIn()} />),
)
const templateRoute = signedInPage(
  '/templates/$id',
  drawing(TemplatePage, () => <TemplatePage id={templateRoute.useParams().id} session={useSignedIn()} />),
)
const webhooksRoute = signedInPage(
  '/webhooks',
  drawing(WebhooksPage, () => <WebhooksPage session={useSignedIn()} />),
)
const settingsRoute = signedInPage(
  '/settings',
  drawing(SettingsPage, () => <SettingsPage session={useSignedIn()} />),
)
const newslettersRoute = signedInPage('/newsletters', NewslettersPage)
const newsletterRoute = signedInPage(
  '/newsletters/$id',
  drawing(NewsletterPage, function Newsletter() {
    const { id } = newsletterRoute.useParams()
    return <NewsletterPage key={id} id={id} session={useSignedIn()} />
  }),
)
const followupsRoute = signedInPage('/followups', FollowupsPage)
const followupRoute = signedInPage(
  '/followups/$id',
  drawing(FollowupPage, function Followup() {
    const { id } = followupRoute.useParams()
    return <FollowupPage key={id} id={id} />
  }),
)
const automationsRoute = signedInPage('/automations', AutomationsPage)
const automationRoute = signedInPage(
  '/automations/$id',
  drawing(AutomationPage, function Automation() {
    const { id } = automationRoute.useParams()
    return <AutomationPage key={id} id={id} />
  }),
)
const mediaRoute = signedInPage('/media', MediaPage)
const knowledgeRoute = signedInPage('/knowledge', KnowledgePage)
const teamRoute = signedInPage(
  '/team',
  drawing(TeamPage, () => <TeamPage session={useSignedIn()} />),
)
const keysRoute = signedInPage('/keys', KeysPage)
const accountRoute = signedInPage(
  '/account',
  drawing(AccountPage, () => <AccountPage session={useSignedIn()} />),
)

export function createAppRouter(queryClient: QueryClient) {
  return createRouter({
    routeTree: root.addChildren([
      signInRoute,
      setupRoute,
      invitationRoute,
      resetRequestRoute,
      resetRoute,
      consentRoute,
      signedIn.addChildren([
        dashboardRoute,
        contactsRoute,
        contactRoute,
        inboxRoute,
        conversationRoute,
        templatesRoute,
        templateRoute,
        webhooksRoute,
        settingsRoute,
        newslettersRoute,
        newsletterRoute,
        followupsRoute,
        followupRoute,
        automationsRoute,
        automationRoute,
        mediaRoute,
        knowledgeRoute,
        teamRoute,
        keysRoute,
        accountRoute,
      ]),
    ]),
    context: { queryClient },
    defaultPreload: false,
  })
}

declare module '@tanstack/react-router' {
  interface Register {
    router: ReturnType<typeof createAppRouter>
  }
}
