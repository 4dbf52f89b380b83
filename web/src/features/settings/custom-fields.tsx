import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useState } from 'react'
import { app, call } from '../../api/client.ts'
import { Field, handleSubmit, TextField } from '../../ui/components.tsx'
import { fill, useWords } from '../../ui/i18n.tsx'
import { PageError } from '../../ui/page-error.tsx'
import { apiQuery } from '../../ui/query.ts'
import { fieldErrors, fieldWords } from './words.ts'

// Custom fields of contacts (a customer number, a birthday, a level): defined here, filled on each contact, written
// into messages as {{key}} and named in segments and filters.

export const contactFieldsQuery = apiQuery(['settings', 'contact-fields'], () => app.GET('/app/contact-fields'))

const TYPES = ['text', 'number', 'date', 'boolean', 'choice'] as const
type FieldType = (typeof TYPES)[number]

/** The typed default from what the member wrote ('' is none). */
function defaultOf(type: FieldType, text: string): string | number | boolean | undefined {
  const value = text.trim()
  if (value === '') return undefined
  if (type === 'number') return Number(value.replace(',', '.'))
  if (type === 'boolean') return ['true', 'ja', 'yes', '1'].includes(value.toLowerCase())
  return value
}

export function CustomFields({ canWrite }: { canWrite: boolean }) {
  const w = useWords(fieldWords)
  const e = useWords(fieldErrors)
  const queryClient = useQueryClient()
  const fields = useQuery(contactFieldsQuery)
  const [key, setKey] = useState('')
  const [label, setLabel] = useState('')
  const [type, setType] = useState<FieldType>('text')
  const [options, setOptions] = useState('')
  const [fallback, setFallback] = useState('')
  const refresh = () => queryClient.invalidateQueries({ queryKey: contactFieldsQuery.queryKey })
  const create = useMutation({
    mutationFn: () => {
      const value = defaultOf(type, fallback)
      return call(
        app.POST('/app/contact-fields', {
          body: {
            key: key.trim(),
            label: label.trim(),
            type,
            ...(type === 'choice'
              ? {
                  options: options
                    .split(',')
                    .map((o) => o.trim())
                    .filter((o) => o !== ''),
                }
              : {}),
            ...(value === undefined ? {} : { default: value }),
          },
        }),
      )
    },
    onSuccess: () => {
      setKey('')
      setLabel('')
      setOptions('')
      setFallback('')
      void refresh()
    },
  })
  const remove = useMutation({
    mutationFn: (fieldKey: string) =>
      call(app.DELETE('/app/contact-fields/{key}', { params: { path: { key: fieldKey } } })),
    onSuccess: () => void refresh(),
  })
  const list = fields.data?.contact_fields ?? []
  return (
    <section aria-labelledby="fields-title">
      <h2 id="fields-title">{w.title}</h2>
      <p className="muted">{w.help}</p>
      <PageError error={fields.error ?? remove.error} words={e} />
      {fields.data && list.length === 0 && <p>{w.empty}</p>}
      {list.length > 0 && (
        <div className="scroll">
          <table data-testid="contact-fields">
            <thead>
              <tr>
                <th scope="col">{w.label}</th>
                <th scope="col">{w.key}</th>
                <th scope="col">{w.type}</th>
                <th scope="col">{w.default}</th>
                {canWrite && (
                  <th scope="col">
                    <span className="visually-hidden">{w.actions}</span>
                  </th>
                )}
              </tr>
            </thead>
            <tbody>
              {list.map((f) => (
                <tr key={f.key}>
                  <td>{f.label}</td>
                  <td>
                    <code>{`{{${f.key}}}`}</code>
                  </td>
                  <td>
                    {w[`type_${f.type}`]}
                    {f.options ? `: ${f.options.join(', ')}` : ''}
                  </td>
                  <td>{f.default === null ? '' : String(f.default)}</td>
                  {canWrite && (
                    <td>
                      <button
                        type="button"
                        className="secondary"
                        disabled={remove.isPending}
                        onClick={() => {
                          if (window.confirm(fill(w.confirmDelete, { label: f.label }))) remove.mutate(f.key)
                        }}
                      >
                        {fill(w.delete, { label: f.label })}
                      </button>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {canWrite && (
        <form onSubmit={handleSubmit(() => create.mutate())} aria-labelledby="field-new-title">
          <h3 id="field-new-title">{w.newTitle}</h3>
          <TextField label={w.label} value={label} onChange={setLabel} required maxLength={80} />
          <TextField
            label={w.key}
            value={key}
            onChange={setKey}
            required
            maxLength={40}
            pattern="[a-z][a-z0-9_]*"
            placeholder="customer_no"
          />
          <Field label={w.type}>
            <select value={type} onChange={(ev) => setType(ev.target.value as FieldType)}>
              {TYPES.map((t) => (
                <option key={t} value={t}>
                  {w[`type_${t}`]}
                </option>
              ))}
            </select>
          </Field>
          {type === 'choice' && (
            <TextField label={w.options} value={options} onChange={setOptions} required placeholder="gold, silver" />
          )}
          <TextField label={w.default} value={fallback} onChange={setFallback} />
          <PageError error={create.error} words={e} />
          <button type="submit" disabled={create.isPending}>
            {w.create}
          </button>
        </form>
      )}
    </section>
  )
}
