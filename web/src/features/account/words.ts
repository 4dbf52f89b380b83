import { commonWords, navWords } from '../../ui/words.ts'

/** The member's own sign-in. */
export const accountWords = {
  de: {
    ...commonWords.de,
    ...navWords.de,
    currentPassword: 'Aktuelles Passwort',
    language: 'Sprache',
    changePassword: 'Passwort ändern',
    passwordChanged: 'Passwort geändert. Alle anderen Sitzungen sind beendet.',
  },
  en: {
    ...commonWords.en,
    ...navWords.en,
    currentPassword: 'Current password',
    language: 'Language',
    changePassword: 'Change password',
    passwordChanged: 'Password changed. Every other session has ended.',
  },
}
