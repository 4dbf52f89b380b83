/** The words of the inbox's internal notes and mentions (notes.tsx). */
export const noteWords = {
  de: {
    modes: 'Schreiben als',
    replyMode: 'Antwort',
    noteMode: 'Notiz',
    note: 'Interne Notiz',
    noteHint: 'Nur für das Team sichtbar, wird nie an die Kundschaft gesendet. Mit @ erwähnen Sie jemanden.',
    saveNote: 'Notiz speichern',
    suggestions: 'Teammitglieder',
    internal: 'Interne Notiz',
    by: 'von {name}',
    someone: 'API',
    mentions: 'Erwähnungen',
    mentionsUnread: '{count} neu',
    noMentions: 'Niemand hat Sie bisher erwähnt.',
    markAllRead: 'Alle als gelesen markieren',
    unreadMark: 'neu',
    inConversation: 'bei {name}',
    unknownContact: 'unbekanntem Kontakt',
  },
  en: {
    modes: 'Write as',
    replyMode: 'Reply',
    noteMode: 'Note',
    note: 'Internal note',
    noteHint: 'Visible to the team only, never sent to the customer. Type @ to mention someone.',
    saveNote: 'Save note',
    suggestions: 'Team members',
    internal: 'Internal note',
    by: 'by {name}',
    someone: 'API',
    mentions: 'Mentions',
    mentionsUnread: '{count} new',
    noMentions: 'Nobody has mentioned you yet.',
    markAllRead: 'Mark all read',
    unreadMark: 'new',
    inConversation: 'with {name}',
    unknownContact: 'unknown contact',
  },
}

export const noteErrors = {
  de: {
    note_empty: 'Die Notiz ist leer.',
    forbidden: 'Das erlaubt Ihre Rolle nicht.',
  },
  en: {
    note_empty: 'The note is empty.',
    forbidden: 'Your role does not allow this.',
  },
}
