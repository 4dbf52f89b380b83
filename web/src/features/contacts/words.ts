import { commonWords, navWords } from '../../ui/words.ts'

/** The contact list and a contact. */
export const contactWords = {
  de: {
    noContactsYet:
      'Noch keine Kontakte. Sie kommen hinzu, wenn Kundschaft Ihrer Nummer schreibt, oder laden Sie unten eine CSV-Datei hoch.',
    ...commonWords.de,
    ...navWords.de,
    search: 'Suchen (Name, E-Mail, Telefon)',
    noContacts: 'Keine Kontakte gefunden.',
    phone: 'Telefon',
    tags: 'Tags',
    optinChat: 'Einwilligung Chat',
    optinEmail: 'Einwilligung E-Mail',
    source: 'Quelle',
    back: 'Zurück',
    more: 'Mehr laden',
  },
  en: {
    noContactsYet: 'No contacts yet. They arrive when customers write to your number, or upload a CSV file below.',
    ...commonWords.en,
    ...navWords.en,
    search: 'Search (name, e-mail, phone)',
    noContacts: 'No contacts found.',
    phone: 'Phone',
    tags: 'Tags',
    optinChat: 'Chat consent',
    optinEmail: 'E-mail consent',
    source: 'Source',
    back: 'Back',
    more: 'Load more',
  },
}

export const importWords = {
  de: {
    title: 'Kontakte importieren (CSV)',
    help: 'Eine CSV-Datei mit Kopfzeile und den Spalten name, email, phone, tags (Telefon international, z. B. +49 151 23456789). Bekannte Adressen werden aktualisiert, Einwilligungen nie erteilt.',
    file: 'CSV-Datei',
    start: 'Importieren',
    progress: 'Fortschritt des Imports',
    rows: '{rows} Zeilen gelesen',
    uploading: 'Wird hochgeladen …',
    done: 'Fertig: {created} neu, {updated} aktualisiert, {unchanged} unverändert, {rejected} abgelehnt von {rows} Zeilen ({seconds} s).',
    rejected: 'Abgelehnte Zeilen',
    line: 'Zeile',
    reason: 'Grund',
    notes: 'Hinweise',
    more: '… und {count} weitere',
  },
  en: {
    title: 'Import contacts (CSV)',
    help: 'A CSV file with a header and the columns name, email, phone, tags (phone in international format, such as +49 151 23456789). Known addresses are updated; consent is never given.',
    file: 'CSV file',
    start: 'Import',
    progress: 'Import progress',
    rows: '{rows} rows read',
    uploading: 'Uploading …',
    done: 'Done: {created} new, {updated} updated, {unchanged} unchanged, {rejected} rejected of {rows} rows ({seconds} s).',
    rejected: 'Rejected lines',
    line: 'Line',
    reason: 'Reason',
    notes: 'Notes',
    more: '… and {count} more',
  },
}

export const importErrors = {
  de: {
    csv_invalid: 'Die Datei ist keine brauchbare CSV-Datei: {message}',
    payload_too_large: 'Die Datei ist zu groß (höchstens 200 MB).',
    limit_reached: 'Das Kontaktlimit des Tarifs ist erreicht.',
    forbidden: 'Das erlaubt Ihre Rolle nicht.',
    internal_error: 'Der Import brach ab; die Zeilen davor sind importiert. Bitte versuchen Sie es erneut.',
  },
  en: {
    csv_invalid: 'The file is not a usable CSV file: {message}',
    payload_too_large: 'The file is too large (at most 200 MB).',
    limit_reached: "The plan's contact limit is reached.",
    forbidden: 'Your role does not allow this.',
    internal_error: 'The import stopped; the lines before it are imported. Please try again.',
  },
}

export const historyWords = {
  de: {
    title: 'Einwilligungsverlauf',
    none: 'Noch keine Änderung der Einwilligung.',
    when: 'Wann',
    channel: 'Kanal',
    change: 'Änderung',
    source: 'Quelle',
    address: 'Adresse',
  },
  en: {
    title: 'Consent history',
    none: 'No change of consent yet.',
    when: 'When',
    channel: 'Channel',
    change: 'Change',
    source: 'Source',
    address: 'Address',
  },
}
