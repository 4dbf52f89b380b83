import { createContext, type ReactNode, useContext, useEffect, useState } from 'react'
import { ApiError } from '../api/client.ts'
import { type EnumKind, enumWord, type Language } from './words.ts'

export type { Language }

const de = {
  appName: 'Herold',
  signIn: 'Anmelden',
  signOut: 'Abmelden',
  email: 'E-Mail-Adresse',
  password: 'Passwort',
  newPassword: 'Neues Passwort (mindestens 10 Zeichen)',
  currentPassword: 'Aktuelles Passwort',
  name: 'Name',
  forgotPassword: 'Passwort vergessen?',
  setupTitle: 'Herold einrichten',
  setupIntro: 'Legen Sie den Inhaber des Kontos „{account}“ an.',
  setupDone: 'Inhaber anlegen',
  invitationTitle: 'Einladung zu {account}',
  invitationIntro: 'Sie wurden als {role} eingeladen ({email}).',
  invitationExisting: 'Sie haben schon ein Herold-Konto: bestätigen Sie mit Ihrem Passwort.',
  accept: 'Einladung annehmen',
  resetTitle: 'Passwort zurücksetzen',
  resetIntro: 'Wir senden einen Link an Ihre E-Mail-Adresse, falls sie zu einem Konto gehört.',
  resetSend: 'Link senden',
  resetSent: 'Falls die Adresse zu einem Konto gehört, ist ein Link unterwegs. Er gilt eine Stunde.',
  resetSave: 'Neues Passwort speichern',
  resetDone: 'Ihr Passwort ist geändert. Bitte melden Sie sich neu an.',
  keys: 'API-Schlüssel',
  keyName: 'Bezeichnung',
  scopes: 'Berechtigungen',
  createKey: 'Schlüssel erstellen',
  keyShownOnce: 'Dieser Schlüssel wird nur jetzt angezeigt. Speichern Sie ihn sicher.',
  copy: 'Kopieren',
  copied: 'Kopiert',
  revoke: 'Widerrufen',
  revoked: 'widerrufen',
  active: 'aktiv',
  created: 'Erstellt',
  prefix: 'Präfix',
  status: 'Status',
  team: 'Team',
  invite: 'Einladen',
  role: 'Rolle',
  lastActive: 'Zuletzt aktiv',
  remove: 'Entfernen',
  invited: 'eingeladen',
  inviteSent: 'Die Einladung ist per E-Mail unterwegs.',
  inviteLink: 'Es konnte keine E-Mail gesendet werden. Geben Sie diesen Link weiter (7 Tage gültig):',
  contacts: 'Kontakte',
  search: 'Suchen (Name, E-Mail, Telefon)',
  noContacts: 'Keine Kontakte gefunden.',
  phone: 'Telefon',
  tags: 'Tags',
  optinChat: 'Einwilligung Chat',
  optinEmail: 'Einwilligung E-Mail',
  source: 'Quelle',
  back: 'Zurück',
  more: 'Mehr laden',
  account: 'Mein Zugang',
  language: 'Sprache',
  changePassword: 'Passwort ändern',
  passwordChanged: 'Passwort geändert. Alle anderen Sitzungen sind beendet.',
  save: 'Speichern',
  loading: 'Lädt …',
  never: 'nie',
  readOnly: 'Ihre Rolle erlaubt hier nur Lesen.',
  owner: 'Inhaber',
  admin: 'Admin',
  member: 'Mitglied',
  viewer: 'Betrachter',
  confirmRemove: 'Wirklich entfernen?',
  mainNav: 'Hauptnavigation',
  errors: {
    network: 'Der Server ist nicht erreichbar. Bitte versuchen Sie es erneut.',
    unauthorized: 'Bitte melden Sie sich an.',
    sign_in_failed: 'E-Mail-Adresse oder Passwort ist falsch.',
    rate_limited: 'Zu viele Versuche. Bitte warten Sie eine Minute.',
    link_invalid: 'Dieser Link ist ungültig, schon benutzt oder abgelaufen.',
    forbidden: 'Das erlaubt Ihre Rolle nicht.',
    csrf_invalid: 'Ihre Sitzung ist nicht mehr gültig. Bitte laden Sie die Seite neu.',
    last_owner: 'Ein Konto braucht mindestens einen aktiven Inhaber.',
    already_member: 'Diese Person ist schon Mitglied.',
    user_exists: 'Zu dieser E-Mail-Adresse gibt es schon einen Zugang.',
    not_found: 'Nicht gefunden.',
    bad_request: 'Bitte prüfen Sie Ihre Eingaben: {message}',
    unknown: 'Etwas ist schiefgegangen: {message}',
  } as Record<string, string>,
  checkFields: 'Bitte prüfen Sie Ihre Eingaben:',
  /** a refused field's rule in words ({limit}: the rule's bound) */
  rules: {
    required: 'Pflichtfeld',
    minLength: 'mindestens {limit} Zeichen',
    maxLength: 'zu lang: höchstens {limit} Zeichen',
    minItems: 'mindestens {limit} Einträge',
    maxItems: 'zu viele: höchstens {limit} Einträge',
    minimum: 'mindestens {limit}',
    maximum: 'höchstens {limit}',
    format: 'ungültiges Format',
    pattern: 'ungültiges Format',
    enum: 'kein erlaubter Wert',
    type: 'falsche Art von Wert',
    additionalProperties: 'unbekanntes Feld',
    invalid: 'ungültig',
  } as Record<string, string>,
}

type Dictionary = typeof de

const en: Dictionary = {
  appName: 'Herold',
  signIn: 'Sign in',
  signOut: 'Sign out',
  email: 'E-mail address',
  password: 'Password',
  newPassword: 'New password (at least 10 characters)',
  currentPassword: 'Current password',
  name: 'Name',
  forgotPassword: 'Forgot your password?',
  setupTitle: 'Set up Herold',
  setupIntro: 'Create the owner of the account “{account}”.',
  setupDone: 'Create owner',
  invitationTitle: 'Invitation to {account}',
  invitationIntro: 'You were invited as {role} ({email}).',
  invitationExisting: 'You have a Herold sign-in already: confirm with your password.',
  accept: 'Accept invitation',
  resetTitle: 'Reset your password',
  resetIntro: 'We send a link to your e-mail address if it belongs to someone.',
  resetSend: 'Send link',
  resetSent: 'If the address belongs to someone, a link is on its way. It is valid for one hour.',
  resetSave: 'Save new password',
  resetDone: 'Your password is changed. Please sign in again.',
  keys: 'API keys',
  keyName: 'Label',
  scopes: 'Scopes',
  createKey: 'Create key',
  keyShownOnce: 'This key is shown only now. Store it safely.',
  copy: 'Copy',
  copied: 'Copied',
  revoke: 'Revoke',
  revoked: 'revoked',
  active: 'active',
  created: 'Created',
  prefix: 'Prefix',
  status: 'Status',
  team: 'Team',
  invite: 'Invite',
  role: 'Role',
  lastActive: 'Last active',
  remove: 'Remove',
  invited: 'invited',
  inviteSent: 'The invitation is on its way by e-mail.',
  inviteLink: 'No e-mail could be sent. Pass on this link (valid for 7 days):',
  contacts: 'Contacts',
  search: 'Search (name, e-mail, phone)',
  noContacts: 'No contacts found.',
  phone: 'Phone',
  tags: 'Tags',
  optinChat: 'Chat consent',
  optinEmail: 'E-mail consent',
  source: 'Source',
  back: 'Back',
  more: 'Load more',
  account: 'My sign-in',
  language: 'Language',
  changePassword: 'Change password',
  passwordChanged: 'Password changed. Every other session has ended.',
  save: 'Save',
  loading: 'Loading …',
  never: 'never',
  readOnly: 'Your role can only read here.',
  owner: 'Owner',
  admin: 'Admin',
  member: 'Member',
  viewer: 'Viewer',
  confirmRemove: 'Really remove?',
  mainNav: 'Main navigation',
  errors: {
    network: 'The server cannot be reached. Please try again.',
    unauthorized: 'Please sign in.',
    sign_in_failed: 'E-mail address or password is wrong.',
    rate_limited: 'Too many attempts. Please wait a minute.',
    link_invalid: 'This link is invalid, was used already or has expired.',
    forbidden: 'Your role does not allow this.',
    csrf_invalid: 'Your session is no longer valid. Please reload the page.',
    last_owner: 'An account needs at least one active owner.',
    already_member: 'This person is a member already.',
    user_exists: 'A sign-in with this e-mail address exists already.',
    not_found: 'Not found.',
    bad_request: 'Please check your input: {message}',
    unknown: 'Something went wrong: {message}',
  },
  checkFields: 'Please check your input:',
  rules: {
    required: 'required',
    minLength: 'at least {limit} characters',
    maxLength: 'too long: at most {limit} characters',
    minItems: 'at least {limit} entries',
    maxItems: 'too many: at most {limit} entries',
    minimum: 'at least {limit}',
    maximum: 'at most {limit}',
    format: 'invalid format',
    pattern: 'invalid format',
    enum: 'not an allowed value',
    type: 'wrong kind of value',
    additionalProperties: 'unknown field',
    invalid: 'invalid',
  },
}

export const dictionaries: Record<Language, Dictionary> = { de, en }

type Key = Exclude<keyof Dictionary, 'errors' | 'rules'>

/** A form's label for a refused field's path (`body.steps.0.tag`); undefined: the app's general words. */
export type FieldLabel = (path: string) => string | undefined

export interface I18n {
  language: Language
  setLanguage(language: Language): void
  t(key: Key, values?: Record<string, string>): string
  /** any error in words; a refusal by field names each field by the form's label */
  error(error: unknown, fieldLabel?: FieldLabel): string
  /** each refused field of an error as `label: rule in words`; empty when it is not about fields */
  fieldProblems(error: unknown, fieldLabel?: FieldLabel): string[]
}

const fill = (text: string, values: Record<string, string> = {}) =>
  text.replace(/\{(\w+)\}/g, (_, name: string) => values[name] ?? '')

/** A field's name when the form gives no label: the path's last name, as words (`feed_url`: feed url). */
const lastName = (path: string) =>
  (
    path
      .split('.')
      .filter((step) => !/^\d+$/.test(step))
      .pop() ?? path
  ).replace(/_/g, ' ')

export function makeI18n(language: Language, setLanguage: (l: Language) => void): I18n {
  const dictionary = dictionaries[language]
  const fieldProblems = (error: unknown, fieldLabel?: FieldLabel) => {
    if (!(error instanceof ApiError)) return []
    return error.fields.map((field) => {
      // a required text the form sends empty is refused as "at least 1 character": it is the same thing
      const rule =
        (field.rule === 'minLength' || field.rule === 'minItems') && field.limit === 1 ? 'required' : field.rule
      const words = fill(dictionary.rules[rule] ?? dictionary.rules.invalid, { limit: String(field.limit ?? '') })
      return `${fieldLabel?.(field.path) ?? lastName(field.path)}: ${words}`
    })
  }
  return {
    language,
    setLanguage,
    t: (key, values) => fill(dictionary[key], values),
    fieldProblems,
    error(error, fieldLabel) {
      const problems = fieldProblems(error, fieldLabel)
      if (problems.length > 0) return `${dictionary.checkFields} ${problems.join('; ')}`
      if (error instanceof ApiError) {
        const text = dictionary.errors[error.code] ?? dictionary.errors.unknown
        return fill(text, { message: error.message || String(error.status) })
      }
      return fill(dictionary.errors.unknown, { message: error instanceof Error ? error.message : '' })
    },
  }
}

const I18nContext = createContext<I18n | null>(null)

export function I18nProvider({ preferred, children }: { preferred: Language | null; children: ReactNode }) {
  const initial: Language = navigator.language.toLowerCase().startsWith('de') ? 'de' : 'en'
  const [language, setLanguage] = useState<Language>(preferred ?? initial)
  useEffect(() => {
    if (preferred) setLanguage(preferred)
  }, [preferred])
  useEffect(() => {
    document.documentElement.lang = language
  }, [language])
  return <I18nContext.Provider value={makeI18n(language, setLanguage)}>{children}</I18nContext.Provider>
}

export function useI18n(): I18n {
  const value = useContext(I18nContext)
  if (!value) throw new Error('useI18n outside I18nProvider')
  return value
}

/** A page's own words in both languages: `const w = useWords({ de: {...}, en: {...} })`. */
export function useWords<T extends Record<string, string>>(words: { de: T; en: T }): T {
  return words[useI18n().language]
}

/** An API enum's value in the member's words: `const say = useEnum(); say('intent', a.intent)`. */
export function useEnum(): (kind: EnumKind, value: string | null | undefined) => string {
  const { language } = useI18n()
  return (kind, value) => enumWord(language, kind, value)
}
