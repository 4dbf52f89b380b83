import type { QueryClient } from '@tanstack/react-query'
import { createRootRouteWithContext, createRoute, createRouter, redirect } from '@tanstack/react-router'
import type { ReactNode } from 'react'
import { AccountPage } from './features/account/account-page.tsx'
import {
  InvitationPage,
  ResetCompletePage,
  ResetRequestPage,
  SetupPage,
  SignInPage,
} from './features/auth/auth-pages.tsx'
import { AutomationPage, AutomationsPage } from './features/automations/automations-pages.tsx'
import { ConsentPage } from './features/consent/consent-page.tsx'
import { ContactPage, ContactsPage } from './features/contacts/contacts-pages.tsx'
import { DashboardPage } from './features/dashboard/dashboard-page.tsx'
import { FollowupPage, FollowupsPage } from './features/followups/followups-pages.tsx'
import { InboxPage } from './features/inbox/inbox-page.tsx'
import { KnowledgePage } from './features/knowledge/knowledge-page.tsx'
import { MediaPage } from './features/media/media-page.tsx'
import { NewsletterPage, NewslettersPage } from './features/newsletters/newsletters-pages.tsx'
import { KeysPage } from './features/people/keys-page.tsx'
import { TeamPage } from './features/people/team-page.tsx'
import { SettingsPage } from './features/settings/settings-page.tsx'
import { TemplatePage, TemplatesPage } from './features/templates/templates-pages.tsx'
import { WebhooksPage } from './features/webhooks/webhooks-page.tsx'
import { Layout, Loading, SignedInLayout } from './ui/layout.tsx'
import { sessionQuery, useSignedIn } from './ui/session.ts'

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
const signedInPage = <P extends string>(path: P, component: () => ReactNode) =>
  createRoute({ getParentRoute: () => signedIn, path, component })

const dashboardRoute = signedInPage('/', () => <DashboardPage />)
const contactsRoute = signedInPage('/contacts', () => <ContactsPage />)
const contactRoute = signedInPage('/contacts/$id', () => <ContactPage id={contactRoute.useParams().id} />)
const inboxRoute = signedInPage('/inbox', () => <InboxPage session={useSignedIn()} />)
const conversationRoute = signedInPage('/inbox/$id', () => (
  <InboxPage id={conversationRoute.useParams().id} session={useSignedIn()} />
))
const templatesRoute = signedInPage('/templates', () => <TemplatesPage session={useSignedIn()} />)
const templateRoute = signedInPage('/templates/$id', () => (
  <TemplatePage id={templateRoute.useParams().id} session={useSignedIn()} />
))
const webhooksRoute = signedInPage('/webhooks', () => <WebhooksPage session={useSignedIn()} />)
const settingsRoute = signedInPage('/settings', () => <SettingsPage session={useSignedIn()} />)
const newslettersRoute = signedInPage('/newsletters', () => <NewslettersPage />)
const newsletterRoute = signedInPage('/newsletters/$id', function Newsletter() {
  const { id } = newsletterRoute.useParams()
  return <NewsletterPage key={id} id={id} session={useSignedIn()} />
})
const followupsRoute = signedInPage('/followups', () => <FollowupsPage />)
const followupRoute = signedInPage('/followups/$id', function Followup() {
  const { id } = followupRoute.useParams()
  return <FollowupPage key={id} id={id} />
})
const automationsRoute = signedInPage('/automations', () => <AutomationsPage />)
const automationRoute = signedInPage('/automations/$id', function Automation() {
  const { id } = automationRoute.useParams()
  return <AutomationPage key={id} id={id} />
})
const mediaRoute = signedInPage('/media', () => <MediaPage />)
const knowledgeRoute = signedInPage('/knowledge', () => <KnowledgePage />)
const teamRoute = signedInPage('/team', () => <TeamPage session={useSignedIn()} />)
const keysRoute = signedInPage('/keys', () => <KeysPage />)
const accountRoute = signedInPage('/account', () => <AccountPage session={useSignedIn()} />)

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
