export const words = {
  de: {
    title: 'Gespeicherte Antworten',
    help: 'Tippen Sie im Antwortfeld / und den Kurzbefehl, z. B. /danke. {{name}} (Vorname), {{full_name}}, {{email}}, {{phone}} und Ihre eigenen Felder werden aus dem Kontakt gefüllt.',
    empty: 'Noch keine gespeicherten Antworten.',
    code: 'Kurzbefehl',
    name: 'Titel',
    text: 'Text',
    media: 'Datei aus der Mediathek',
    noMedia: 'keine',
    create: 'Antwort speichern',
    save: 'Änderungen speichern',
    cancel: 'Abbrechen',
    newTitle: 'Neue Antwort',
    editTitle: 'Antwort /{code} ändern',
    edit: '/{code} ändern',
    delete: '/{code} löschen',
    confirmDelete: 'Die gespeicherte Antwort /{code} löschen?',
  },
  en: {
    title: 'Saved replies',
    help: 'Type / and the code in the reply box, e.g. /thanks. {{name}} (first name), {{full_name}}, {{email}}, {{phone}} and your own fields are filled from the contact.',
    empty: 'No saved replies yet.',
    code: 'Code',
    name: 'Title',
    text: 'Text',
    media: 'File from the media library',
    noMedia: 'none',
    create: 'Save reply',
    save: 'Save changes',
    cancel: 'Cancel',
    newTitle: 'New reply',
    editTitle: 'Change reply /{code}',
    edit: 'Change /{code}',
    delete: 'Delete /{code}',
    confirmDelete: 'Delete the saved reply /{code}?',
  },
}

export const errors = {
  de: {
    saved_reply_code_taken: 'Diesen Kurzbefehl gibt es schon.',
    saved_reply_limit_reached: 'Mehr als 500 gespeicherte Antworten sind nicht möglich.',
    saved_reply_unknown_variable: 'Eine Variable kann nicht aus dem Kontakt gefüllt werden: {message}',
    media_not_found: 'Diese Datei gibt es in der Mediathek nicht mehr.',
    forbidden: 'Das erlaubt Ihre Rolle nicht.',
  },
  en: {
    saved_reply_code_taken: 'This code exists already.',
    saved_reply_limit_reached: 'No more than 500 saved replies are possible.',
    saved_reply_unknown_variable: 'A variable cannot be filled from the contact: {message}',
    media_not_found: 'This file is no longer in the media library.',
    forbidden: 'Your role does not allow this.',
  },
}

/** The picker in the reply box (web/src/features/inbox/saved-replies.tsx). */
export const pickerWords = {
  de: {
    label: 'Gespeicherte Antworten',
    none: 'Keine gespeicherte Antwort passt. Anlegen unter Einstellungen.',
    missing: 'Dem Kontakt fehlt ein Wert für: {names}. Ergänzen Sie den Kontakt oder schreiben Sie selbst.',
    attached: 'Wird mit der Datei {name} gesendet; der Text ist ihre Beschriftung (höchstens 1024 Zeichen).',
    detach: 'Datei entfernen',
  },
  en: {
    label: 'Saved replies',
    none: 'No saved reply matches. Add them in the settings.',
    missing: 'The contact has no value for: {names}. Complete the contact or write the reply yourself.',
    attached: 'Sent with the file {name}; the text is its caption (at most 1024 characters).',
    detach: 'Remove the file',
  },
}
