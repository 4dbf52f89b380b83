import { commonWords, navWords } from '../../ui/words.ts'

/** Signing in, setting up, invitations and password resets. */
export const authWords = {
  de: {
    ...commonWords.de,
    ...navWords.de,
    signIn: 'Anmelden',
    forgotPassword: 'Passwort vergessen?',
    setupTitle: 'Herold einrichten',
    setupIntro: 'Legen Sie den Inhaber des Kontos „{account}“ an.',
    setupDone: 'Inhaber anlegen',
    invitationTitle: 'Einladung zu {account}',
    invitationIntro: 'Sie wurden als {role} eingeladen ({email}).',
    invitationExisting:
      'Neu bei Herold? Wählen Sie ein Passwort. Haben Sie schon eine Herold-Anmeldung, geben Sie deren Passwort ein (Ihr Name bleibt dann, wie er ist).',
    accept: 'Einladung annehmen',
    resetTitle: 'Passwort zurücksetzen',
    resetIntro: 'Wir senden einen Link an Ihre E-Mail-Adresse, falls sie zu einem Konto gehört.',
    resetSend: 'Link senden',
    resetSent: 'Falls die Adresse zu einem Konto gehört, ist ein Link unterwegs. Er gilt eine Stunde.',
    resetSave: 'Neues Passwort speichern',
    resetDone: 'Ihr Passwort ist geändert. Bitte melden Sie sich neu an.',
  },
  en: {
    ...commonWords.en,
    ...navWords.en,
    signIn: 'Sign in',
    forgotPassword: 'Forgot your password?',
    setupTitle: 'Set up Herold',
    setupIntro: 'Create the owner of the account “{account}”.',
    setupDone: 'Create owner',
    invitationTitle: 'Invitation to {account}',
    invitationIntro: 'You were invited as {role} ({email}).',
    invitationExisting:
      'New to Herold? Choose a password. Have a Herold sign-in already? Enter its password (your name then stays as it is).',
    accept: 'Accept invitation',
    resetTitle: 'Reset your password',
    resetIntro: 'We send a link to your e-mail address if it belongs to someone.',
    resetSend: 'Send link',
    resetSent: 'If the address belongs to someone, a link is on its way. It is valid for one hour.',
    resetSave: 'Save new password',
    resetDone: 'Your password is changed. Please sign in again.',
  },
}
