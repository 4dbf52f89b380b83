import { useMutation } from '@tanstack/react-query'
import { Link, Navigate, Outlet, useNavigate } from '@tanstack/react-router'
import { app, call } from '../api/client.ts'
import { I18nProvider, useI18n, useWords } from './i18n.tsx'
import { type SessionShape, useSession, useSetSession } from './session.ts'
import { commonWords, navWords } from './words.ts'

function Header({ session }: { session: SessionShape | null }) {
  const { language, setLanguage } = useI18n()
  const w = useWords(navWords)
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
      <span className="brand">{w.appName}</span>
      {session && (
        <nav aria-label={w.mainNav}>
          <Link to="/" activeOptions={{ exact: true }}>
            {w.dashboard}
          </Link>
          <Link to="/contacts">{w.contacts}</Link>
          <Link to="/inbox">{w.inbox}</Link>
          <Link to="/templates">{w.templates}</Link>
          <Link to="/webhooks">{w.webhooks}</Link>
          <Link to="/settings">{w.settings}</Link>
          <Link to="/newsletters">{w.newsletters}</Link>
          <Link to="/followups">{w.followups}</Link>
          <Link to="/automations">{w.automations}</Link>
          <Link to="/media">{w.media}</Link>
          <Link to="/knowledge">{w.knowledge}</Link>
          <Link to="/team">{w.team}</Link>
          {session.permissions.includes('keys:manage') && <Link to="/keys">{w.keys}</Link>}
          <Link to="/account">{w.account}</Link>
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
          {w.signOut}
        </button>
      )}
    </header>
  )
}

/** Every page: the header, the member's language, the page. */
export function Layout() {
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

/** While the session is first asked for. */
export function Loading() {
  return <p>{useWords(commonWords).loading}</p>
}

/** The pages for signed-in members (the route's beforeLoad has checked); a session that ends leads to sign-in. */
export function SignedInLayout() {
  const session = useSession()
  if (session.data) return <Outlet />
  return session.isPending ? <Loading /> : <Navigate to="/sign-in" />
}
