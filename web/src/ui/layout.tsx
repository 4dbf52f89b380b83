import { useMutation } from '@tanstack/react-query'
import { Link, Navigate, Outlet, useNavigate } from '@tanstack/react-router'
import { app, call } from '../api/client.ts'
import { dashboardNav } from '../features/dashboard/dashboard-page.tsx'
import { inboxNav } from '../features/inbox/inbox-page.tsx'
import { settingsNav } from '../features/settings/settings-page.tsx'
import { templatesNav } from '../features/templates/templates-pages.tsx'
import { webhooksNav } from '../features/webhooks/webhooks-page.tsx'
import { useCampaignNav } from './campaign.tsx'
import { I18nProvider, useI18n } from './i18n.tsx'
import { type SessionShape, useSession, useSetSession } from './session.ts'

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
  const { t } = useI18n()
  return <p>{t('loading')}</p>
}

/** The pages for signed-in members (the route's beforeLoad has checked); a session that ends leads to sign-in. */
export function SignedInLayout() {
  const session = useSession()
  if (session.data) return <Outlet />
  return session.isPending ? <Loading /> : <Navigate to="/sign-in" />
}
