import { QueryClient, QueryClientProvider, useMutation } from '@tanstack/react-query'
import {
  createRootRoute,
  createRoute,
  createRouter,
  Link,
  Navigate,
  Outlet,
  RouterProvider,
  useNavigate,
  useParams,
} from '@tanstack/react-router'
import type { ReactNode } from 'react'
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { ApiError, app, call } from './api/client.ts'
import { I18nProvider, useI18n } from './i18n.tsx'
import { AccountPage } from './pages/account.tsx'
import { InvitationPage, ResetCompletePage, ResetRequestPage, SetupPage, SignInPage } from './pages/auth.tsx'
import { AutomationPage, AutomationsPage } from './pages/automations.tsx'
import { useCampaignNav } from './pages/campaign-ui.tsx'
import { ConsentPage } from './pages/consent.tsx'
import { ContactPage, ContactsPage } from './pages/contacts.tsx'
import { DashboardPage, dashboardNav } from './pages/dashboard.tsx'
import { FollowupPage, FollowupsPage } from './pages/followups.tsx'
import { InboxPage, inboxNav } from './pages/inbox.tsx'
import { KeysPage } from './pages/keys.tsx'
import { KnowledgePage, MediaPage } from './pages/media.tsx'
import { NewsletterPage, NewslettersPage } from './pages/newsletters.tsx'
import { SettingsPage, settingsNav } from './pages/settings.tsx'
import { TeamPage } from './pages/team.tsx'
import { TemplatePage, TemplatesPage, templatesNav } from './pages/templates.tsx'
import { WebhooksPage, webhooksNav } from './pages/webhooks.tsx'
import { type SessionShape, useSession, useSetSession } from './session.ts'
import './styles.css'

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // a 4xx does not get better by asking again
      retry: (count, error) => !(error instanceof ApiError && error.status >= 400 && error.status < 500) && count < 2,
      refetchOnWindowFocus: false,
    },
  },
})

function Header({ session }: { session: SessionShape | null }) {
  const { t, language, setLanguage } = useI18n()
  const campaign = useCampaignNav()
  const setSession = useSetSession()
  const navigate = useNavigate()
  const signOut = useMutation({
    mutationFn: () => call(app.POST('/app/sign-out')),
    onSettled: () => {
      setSession(null)
      void navigate({ to: '/sign-in' })
    },
  })
  return (
    <header>
      <span className="brand">{t('appName')}</span>
      {session && (
        <nav aria-label={t('mainNav')}>
          <Link to="/" activeOptions={{ exact: true }}>
            {dashboardNav[language]}
          </Link>
          <Link to="/contacts">{t('contacts')}</Link>
          <Link to="/inbox">{inboxNav[language]}</Link>
          <Link to="/templates">{templatesNav[language]}</Link>
          <Link to="/webhooks">{webhooksNav[language]}</Link>
          <Link to="/settings">{settingsNav[language]}</Link>
          <Link to="/newsletters">{campaign.newsletters}</Link>
          <Link to="/followups">{campaign.followups}</Link>
          <Link to="/automations">{campaign.automations}</Link>
          <Link to="/media">{campaign.media}</Link>
          <Link to="/knowledge">{campaign.knowledge}</Link>
          <Link to="/team">{t('team')}</Link>
          {session.permissions.includes('keys:manage') && <Link to="/keys">{t('keys')}</Link>}
          <Link to="/account">{t('account')}</Link>
        </nav>
      )}
      <span className="spacer" />
      {!session && (
        <button
          type="button"
          onClick={() => setLanguage(language === 'de' ? 'en' : 'de')}
          lang={language === 'de' ? 'en' : 'de'}
        >
          {language === 'de' ? 'English' : 'Deutsch'}
        </button>
      )}
      {session && (
        <button type="button" onClick={() => signOut.mutate()}>
          {t('signOut')}
        </button>
      )}
    </header>
  )
}

function Layout() {
  const session = useSession()
  return (
    <I18nProvider preferred={session.data?.user.language ?? null}>
      <a className="skip" href="#content">
        Skip to content
      </a>
      <Header session={session.data ?? null} />
      <div id="content">
        <Outlet />
      </div>
    </I18nProvider>
  )
}

/** A page for signed-in members: without a session, the sign-in page. */
function Signed({ children }: { children: (session: SessionShape) => ReactNode }) {
  const session = useSession()
  const { t } = useI18n()
  if (session.isPending) return <p>{t('loading')}</p>
  if (!session.data) return <Navigate to="/sign-in" />
  return <>{children(session.data)}</>
}

const root = createRootRoute({ component: Layout })
/** A page's `$id`, for the campaign pages' detail routes. */
const useId = () => (useParams({ strict: false }) as { id: string }).id
const newslettersRoute = createRoute({
  getParentRoute: () => root,
  path: '/newsletters',
  component: () => <Signed>{() => <NewslettersPage />}</Signed>,
})
const newsletterRoute = createRoute({
  getParentRoute: () => root,
  path: '/newsletters/$id',
  component: function Newsletter() {
    const id = useId()
    return <Signed>{(session) => <NewsletterPage key={id} id={id} session={session} />}</Signed>
  },
})
const followupsRoute = createRoute({
  getParentRoute: () => root,
  path: '/followups',
  component: () => <Signed>{() => <FollowupsPage />}</Signed>,
})
const followupRoute = createRoute({
  getParentRoute: () => root,
  path: '/followups/$id',
  component: function Followup() {
    const id = useId()
    return <Signed>{() => <FollowupPage key={id} id={id} />}</Signed>
  },
})
const automationsRoute = createRoute({
  getParentRoute: () => root,
  path: '/automations',
  component: () => <Signed>{() => <AutomationsPage />}</Signed>,
})
const automationRoute = createRoute({
  getParentRoute: () => root,
  path: '/automations/$id',
  component: function Automation() {
    const id = useId()
    return <Signed>{() => <AutomationPage key={id} id={id} />}</Signed>
  },
})
const mediaRoute = createRoute({
  getParentRoute: () => root,
  path: '/media',
  component: () => <Signed>{() => <MediaPage />}</Signed>,
})
const knowledgeRoute = createRoute({
  getParentRoute: () => root,
  path: '/knowledge',
  component: () => <Signed>{() => <KnowledgePage />}</Signed>,
})
const consentRoute = createRoute({ getParentRoute: () => root, path: '/consent', component: ConsentPage })
const routes = [
  createRoute({
    getParentRoute: () => root,
    path: '/',
    component: () => <Signed>{() => <DashboardPage />}</Signed>,
  }),
  createRoute({ getParentRoute: () => root, path: '/sign-in', component: SignInPage }),
  createRoute({
    getParentRoute: () => root,
    path: '/setup/$token',
    component: function Setup() {
      const { token } = setupParams()
      return <SetupPage token={token} />
    },
  }),
  createRoute({
    getParentRoute: () => root,
    path: '/invitations/$token',
    component: function Invitation() {
      const { token } = invitationParams()
      return <InvitationPage token={token} />
    },
  }),
  createRoute({ getParentRoute: () => root, path: '/reset', component: ResetRequestPage }),
  createRoute({
    getParentRoute: () => root,
    path: '/reset/$token',
    component: function Reset() {
      const { token } = resetParams()
      return <ResetCompletePage token={token} />
    },
  }),
  createRoute({ getParentRoute: () => root, path: '/keys', component: () => <Signed>{() => <KeysPage />}</Signed> }),
  createRoute({
    getParentRoute: () => root,
    path: '/team',
    component: () => <Signed>{(session) => <TeamPage session={session} />}</Signed>,
  }),
  createRoute({
    getParentRoute: () => root,
    path: '/contacts',
    component: () => <Signed>{() => <ContactsPage />}</Signed>,
  }),
  createRoute({
    getParentRoute: () => root,
    path: '/contacts/$id',
    component: function Contact() {
      const { id } = contactParams()
      return <Signed>{() => <ContactPage id={id} />}</Signed>
    },
  }),
  createRoute({
    getParentRoute: () => root,
    path: '/account',
    component: () => <Signed>{(session) => <AccountPage session={session} />}</Signed>,
  }),
  newslettersRoute,
  newsletterRoute,
  followupsRoute,
  followupRoute,
  automationsRoute,
  automationRoute,
  mediaRoute,
  knowledgeRoute,
  consentRoute,
] as const
const [, , setupRoute, invitationRoute, , resetRoute, , , , contactRoute] = routes
const inboxRoute = createRoute({
  getParentRoute: () => root,
  path: '/inbox',
  component: () => <Signed>{(session) => <InboxPage session={session} />}</Signed>,
})
const conversationRoute = createRoute({
  getParentRoute: () => root,
  path: '/inbox/$id',
  component: function Conversation() {
    const { id } = conversationRoute.useParams() as { id: string }
    return <Signed>{(session) => <InboxPage id={id} session={session} />}</Signed>
  },
})
const templatesRoute = createRoute({
  getParentRoute: () => root,
  path: '/templates',
  component: () => <Signed>{(session) => <TemplatesPage session={session} />}</Signed>,
})
const templateRoute = createRoute({
  getParentRoute: () => root,
  path: '/templates/$id',
  component: function Template() {
    const { id } = templateRoute.useParams() as { id: string }
    return <Signed>{(session) => <TemplatePage id={id} session={session} />}</Signed>
  },
})
const setupParams = () => setupRoute.useParams() as { token: string }
const invitationParams = () => invitationRoute.useParams() as { token: string }
const resetParams = () => resetRoute.useParams() as { token: string }
const contactParams = () => contactRoute.useParams() as { id: string }

const webhooksRoute = createRoute({
  getParentRoute: () => root,
  path: '/webhooks',
  component: () => <Signed>{(session) => <WebhooksPage session={session} />}</Signed>,
})
const settingsRoute = createRoute({
  getParentRoute: () => root,
  path: '/settings',
  component: () => <Signed>{(session) => <SettingsPage session={session} />}</Signed>,
})

const router = createRouter({
  routeTree: root.addChildren([
    ...routes,
    inboxRoute,
    conversationRoute,
    templatesRoute,
    templateRoute,
    webhooksRoute,
    settingsRoute,
  ]),
  defaultPreload: false,
})

declare module '@tanstack/react-router' {
  interface Register {
    router: typeof router
  }
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
)
