import { useMutation, useQuery } from '@tanstack/react-query'
import { Link, Navigate, Outlet, useNavigate } from '@tanstack/react-router'
import { type ReactNode, useEffect, useRef } from 'react'
import { app, call } from '../api/client.ts'
import { useLiveInbox, usePolling } from '../features/inbox/live.ts'
import { AvailabilityToggle } from '../features/routing/availability-toggle.tsx'
import { fill, I18nProvider, useI18n, useWords } from './i18n.tsx'
import { inboxPageQuery } from './inbox-query.ts'
import { type SessionShape, useSession, useSetSession } from './session.ts'
import { commonWords, navWords } from './words.ts'

type NavWords = (typeof navWords)['en']
type Place = {
  to: string
  word: keyof NavWords
  exact?: boolean
  /** shown only to members with this permission */
  needs?: string
}

/**
 * The places of the console in their groups: the sidebar (tablet and desktop) and the phone's drawer both show this
 * list, so a new page is one line here (and its route). The settings group is where account-wide pages go.
 */
export const PLACES: ReadonlyArray<{ group: keyof NavWords; places: readonly Place[] }> = [
  {
    group: 'groupDaily',
    places: [
      { to: '/', word: 'dashboard', exact: true },
      { to: '/inbox', word: 'inbox' },
      { to: '/contacts', word: 'contacts' },
    ],
  },
  {
    group: 'groupCampaigns',
    places: [
      { to: '/newsletters', word: 'newsletters' },
      { to: '/followups', word: 'followups' },
      { to: '/automations', word: 'automations' },
      { to: '/templates', word: 'templates' },
      { to: '/media', word: 'media' },
      { to: '/knowledge', word: 'knowledge' },
    ],
  },
  {
    group: 'groupSetup',
    places: [
      { to: '/settings', word: 'settings' },
      { to: '/team', word: 'team' },
      { to: '/webhooks', word: 'webhooks' },
      { to: '/keys', word: 'keys', needs: 'keys:manage' },
      { to: '/account', word: 'account' },
    ],
  },
]

/**
 * The unread inbound messages of the inbox's first page, kept fresh by the live stream (opened here, once per page)
 * or, while it is down, asked every 10 s; the tab's title shows them.
 */
function useUnread(session: SessionShape | null): number {
  const allowed = session?.scopes.includes('inbox:read') ?? false
  useLiveInbox(allowed)
  const inbox = useQuery({ ...inboxPageQuery, enabled: allowed, refetchInterval: usePolling(10_000) })
  const w = useWords(navWords)
  const unread = allowed ? (inbox.data?.unread_count ?? 0) : 0
  useEffect(() => {
    document.title = unread > 0 ? fill(w.unreadTitle, { count: String(unread) }) : w.appName
  }, [unread, w])
  return unread
}

/**
 * The inbox's word with its unread count as a badge: the link is named by the word alone (as the page's heading),
 * the count is its description, so a screen reader says both and the name stays the same as messages come in.
 */
function InboxWord({ unread, id }: { unread: number; id: string }) {
  const w = useWords(navWords)
  return (
    <>
      {w.inbox}
      {unread > 0 && (
        <span className="badge count" id={id} aria-hidden="true">
          {unread}
        </span>
      )}
    </>
  )
}

function Places({
  session,
  unread,
  onPick,
  id,
}: {
  session: SessionShape
  unread: number
  onPick?: () => void
  id: string
}) {
  const w = useWords(navWords)
  return (
    <nav aria-label={w.mainNav}>
      {PLACES.map(({ group, places }) => (
        <div key={group}>
          <p className="group" id={`${id}-${group}`}>
            {w[group]}
          </p>
          <ul className="places" aria-labelledby={`${id}-${group}`}>
            {places
              .filter((place) => !place.needs || session.permissions.includes(place.needs))
              .map((place) => (
                <li key={place.to}>
                  <Link
                    to={place.to}
                    activeOptions={{ exact: place.exact ?? false }}
                    onClick={onPick}
                    aria-describedby={place.word === 'inbox' && unread > 0 ? `${id}-unread` : undefined}
                  >
                    {place.word === 'inbox' ? <InboxWord unread={unread} id={`${id}-unread`} /> : w[place.word]}
                  </Link>
                </li>
              ))}
          </ul>
        </div>
      ))}
    </nav>
  )
}

function SignOutButton() {
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
    <button type="button" onClick={() => signOut.mutate()}>
      {w.signOut}
    </button>
  )
}

function LanguageButton() {
  const { language, setLanguage } = useI18n()
  return (
    <button
      type="button"
      onClick={() => setLanguage(language === 'de' ? 'en' : 'de')}
      lang={language === 'de' ? 'en' : 'de'}
    >
      {language === 'de' ? 'English' : 'Deutsch'}
    </button>
  )
}

/** A signed-in member's frame: a sidebar from tablet width; on a phone a top bar, a bottom bar and a drawer. */
function SignedInFrame({ session, children }: { session: SessionShape; children: ReactNode }) {
  const w = useWords(navWords)
  const unread = useUnread(session)
  const drawer = useRef<HTMLDialogElement>(null)
  const openDrawer = () => drawer.current?.showModal()
  const closeDrawer = () => drawer.current?.close()
  return (
    <div className="frame signed-in">
      <a className="skip" href="#content">
        {w.skip}
      </a>
      <header className="topbar">
        <Link to="/" className="brand">
          {w.appName}
        </Link>
        <span className="spacer" />
        <button type="button" aria-haspopup="dialog" onClick={openDrawer}>
          {w.menu}
        </button>
      </header>
      <aside className="sidebar">
        <Link to="/" className="brand">
          {w.appName}
        </Link>
        <Places session={session} unread={unread} id="sidebar" />
        <div className="sidebar-foot">
          <AvailabilityToggle />
          <SignOutButton />
        </div>
      </aside>
      <div id="content">{children}</div>
      <nav className="bottombar" aria-label={w.places}>
        <Link to="/" activeOptions={{ exact: true }}>
          {w.dashboard}
        </Link>
        <Link to="/inbox" aria-describedby={unread > 0 ? 'bar-unread' : undefined}>
          <InboxWord unread={unread} id="bar-unread" />
        </Link>
        <Link to="/contacts">{w.contacts}</Link>
        <button type="button" aria-haspopup="dialog" onClick={openDrawer}>
          {w.more}
        </button>
      </nav>
      <dialog ref={drawer} className="drawer" aria-label={w.menu}>
        <div className="drawer-head">
          <span className="brand">{w.appName}</span>
          <button type="button" onClick={closeDrawer}>
            {w.close}
          </button>
        </div>
        <Places session={session} unread={unread} onPick={closeDrawer} id="drawer" />
        <AvailabilityToggle />
        <p>
          <SignOutButton />
        </p>
      </dialog>
    </div>
  )
}

/** Every page: the frame, the member's language, the page. */
export function Layout() {
  const session = useSession()
  return (
    <I18nProvider preferred={session.data?.user.language ?? null}>
      {session.data ? (
        <SignedInFrame session={session.data}>
          <Outlet />
        </SignedInFrame>
      ) : (
        <SignedOutFrame />
      )}
    </I18nProvider>
  )
}

function SignedOutFrame() {
  const w = useWords(navWords)
  return (
    <div className="frame signed-out">
      <a className="skip" href="#content">
        {w.skip}
      </a>
      <header className="topbar">
        <span className="brand">{w.appName}</span>
        <span className="spacer" />
        <LanguageButton />
      </header>
      <div id="content">
        <Outlet />
      </div>
    </div>
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
