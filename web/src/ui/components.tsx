import { Link, type LinkProps } from '@tanstack/react-router'
import {
  cloneElement,
  type FormEvent,
  type InputHTMLAttributes,
  type ReactElement,
  type ReactNode,
  useId,
  useState,
} from 'react'
import { type FieldLabel, useEnum, useI18n, useWords } from './i18n.tsx'
import { commonWords, type EnumKind, errorWords } from './words.ts'

/** An error in words, announced to screen readers; a refusal by field lists each field by the form's label. */
export function ErrorText({ error, fieldLabel }: { error: unknown; fieldLabel?: FieldLabel }) {
  const { error: words, fieldProblems, language } = useI18n()
  if (!error) return null
  const problems = fieldProblems(error, fieldLabel)
  if (problems.length > 0) {
    return (
      <div className="error" role="alert" data-testid="field-problems">
        <p>{errorWords[language].checkFields}</p>
        <ul>
          {problems.map((problem) => (
            <li key={problem}>{problem}</li>
          ))}
        </ul>
      </div>
    )
  }
  return (
    <p className="error" role="alert">
      {words(error)}
    </p>
  )
}

/** A visible label tied to its control by id, so the control's accessible name is exactly the label. */
export function Field({ label, children }: { label: string; children: ReactElement<{ id?: string }> }) {
  const id = useId()
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {cloneElement(children, { id })}
    </div>
  )
}

/** A labelled input of text: what the member types is the value (`<TextField label={w.name} value={name} onChange={setName} />`). */
export function TextField({
  label,
  value,
  onChange,
  ...attributes
}: { label: string; value: string; onChange: (value: string) => void } & Omit<
  InputHTMLAttributes<HTMLInputElement>,
  'value' | 'onChange' | 'id'
>) {
  return (
    <Field label={label}>
      <input {...attributes} value={value} onChange={(event) => onChange(event.target.value)} />
    </Field>
  )
}

/** A password: the member's current one, or a new one (at least 10 characters, as the server requires). */
export function PasswordField({
  label,
  value,
  onChange,
  isNew = false,
}: {
  label: string
  value: string
  onChange: (value: string) => void
  isNew?: boolean
}) {
  return (
    <TextField
      label={label}
      type="password"
      autoComplete={isNew ? 'new-password' : 'current-password'}
      minLength={isNew ? 10 : undefined}
      required
      value={value}
      onChange={onChange}
    />
  )
}

/** The options of a select of an API enum's values, each in the member's words. */
export function EnumOptions({ kind, values }: { kind: EnumKind; values: readonly string[] }) {
  const say = useEnum()
  return values.map((value) => (
    <option key={value} value={value}>
      {say(kind, value)}
    </option>
  ))
}

/** The way back from a detail page to its list. */
export function BackLink({ to, label }: { to: LinkProps['to']; label: string }) {
  return (
    <p className="back-link">
      <Link to={to}>← {label}</Link>
    </p>
  )
}

export function Card({ title, children }: { title: string; children: ReactNode }) {
  return (
    <main className="card">
      <h1>{title}</h1>
      {children}
    </main>
  )
}

export function formatTime(iso: string | null | undefined, language: string, never: string): string {
  if (!iso) return never
  return new Intl.DateTimeFormat(language === 'de' ? 'de-DE' : 'en-GB', {
    dateStyle: 'medium',
    timeStyle: 'short',
  }).format(new Date(iso))
}

/** A button that copies a text and says so. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const w = useWords(commonWords)
  const [done, setDone] = useState(false)
  return (
    <button
      type="button"
      aria-label={`${done ? w.copied : w.copy}: ${label}`}
      onClick={() => {
        void navigator.clipboard?.writeText(text).catch(() => {})
        setDone(true)
      }}
    >
      {done ? w.copied : w.copy}
    </button>
  )
}

/** A form's submit handler: the page stays, `act` runs (`<form onSubmit={handleSubmit(() => save.mutate())}>`). */
export const handleSubmit = (act: () => void) => (event: FormEvent) => {
  event.preventDefault()
  act()
}
