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
} from '@tanstack/react-router'
import type { ReactNode } from 'react'
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { ApiError, app, call } from './api/client.ts'
import { I18nProvider, useI18n } from './i18n.tsx'
import { AccountPage } from './pages/account.tsx'
import { InvitationPage, ResetCompletePage, ResetRequestPage, SetupPage, SignInPage } from './pages/auth.tsx'
import { ConsentPage } from './pages/consent.tsx'
import { ContactPage, ContactsPage } from './pages/contacts.tsx'
import { KeysPage } from './pages/keys.tsx'
import { TeamPage } from './pages/team.tsx'
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
          <Link to="/contacts">{t('contacts')}</Link>
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
const consentRoute = createRoute({ getParentRoute: () => root, path: '/consent', component: ConsentPage })
const routes = [
  createRoute({
    getParentRoute: () => root,
    path: '/',
    component: () => <Signed>{() => <Navigate to="/contacts" />}</Signed>,
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
  consentRoute,
] as const
const [, , setupRoute, invitationRoute, , resetRoute, , , , contactRoute] = routes
const setupParams = () => setupRoute.useParams() as { token: string }
const invitationParams = () => invitationRoute.useParams() as { token: string }
const resetParams = () => resetRoute.useParams() as { token: string }
const contactParams = () => contactRoute.useParams() as { id: string }

const router = createRouter({ routeTree: root.addChildren([...routes]), defaultPreload: false })

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
