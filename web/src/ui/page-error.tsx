import { ApiError } from '../api/client.ts'
import { ErrorText } from './components.tsx'
import { fill } from './i18n.tsx'

/**
 * An error in words: the page's own sentence for the error's key or code when it has one, else the app's general
 * words (ErrorText). Never raw JSON.
 */
export function PageError({ error, words }: { error: unknown; words: Record<string, string> }) {
  if (!error) return null
  if (error instanceof ApiError) {
    const text = words[error.key] ?? words[error.code]
    if (text) {
      return (
        <p className="error" role="alert">
          {fill(text, { message: error.message })}
        </p>
      )
    }
  }
  return <ErrorText error={error} />
}
