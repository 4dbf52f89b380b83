import { type ReactNode, useId, useState } from 'react'
import { handleSubmit, TextField } from '../../ui/components.tsx'
import { useWords } from '../../ui/i18n.tsx'
import { words } from './words.ts'

// The two ways a file comes in, for the media library and the knowledge alike: dropped (or chosen), or loaded from an
// address.

/** A drop zone with a file input beside it (the keyboard's way in). */
export function DropZone({ onFile, busy, accept }: { onFile: (file: File) => void; busy: boolean; accept?: string }) {
  const w = useWords(words)
  const [over, setOver] = useState(false)
  const id = useId()
  return (
    // dragging is the mouse's way in; the file input inside is the keyboard's
    // biome-ignore lint/a11y/noStaticElementInteractions: see above
    <div
      className={over ? 'dropzone over' : 'dropzone'}
      data-testid="dropzone"
      onDragOver={(e) => {
        e.preventDefault()
        setOver(true)
      }}
      onDragLeave={() => setOver(false)}
      onDrop={(e) => {
        e.preventDefault()
        setOver(false)
        const file = e.dataTransfer.files[0]
        if (file) onFile(file)
      }}
    >
      <p>{w.drop}</p>
      <label htmlFor={id}>{w.choose}</label>{' '}
      <input
        id={id}
        type="file"
        accept={accept}
        disabled={busy}
        onChange={(e) => {
          const file = e.target.files?.[0]
          if (file) onFile(file)
          e.target.value = ''
        }}
      />
    </div>
  )
}

export function UrlForm({
  onUrl,
  busy,
  children,
}: {
  onUrl: (url: string) => void
  busy: boolean
  children?: ReactNode
}) {
  const w = useWords(words)
  const [url, setUrl] = useState('')
  return (
    <form className="inline" onSubmit={handleSubmit(() => onUrl(url))}>
      <TextField label={w.url} type="url" value={url} required onChange={setUrl} />
      {children}
      <button type="submit" disabled={busy}>
        {w.load}
      </button>
    </form>
  )
}
