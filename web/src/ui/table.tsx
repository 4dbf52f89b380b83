import type { ReactNode, TableHTMLAttributes } from 'react'

/** A column: its header, and what it shows of a row. */
export type Column<T> = readonly [header: ReactNode, cell: (row: T, index: number) => ReactNode]

/**
 * A table of rows under column headers; a column given as `false` is left out (one the member may not use).
 * The caption, when there is one, is for screen readers only. On a phone each row shows as a small card whose cells
 * are labelled by their column (`stack` in styles.css), so no table makes a page scroll sideways.
 */
export function Table<T>({
  columns,
  rows,
  rowKey,
  caption,
  ...attributes
}: {
  columns: ReadonlyArray<Column<T> | false>
  rows: readonly T[] | undefined
  rowKey: (row: T, index: number) => string | number
  caption?: string
} & Omit<TableHTMLAttributes<HTMLTableElement>, 'children'>) {
  const shown = columns.filter((column): column is Column<T> => column !== false)
  return (
    <table {...attributes} className={['stack', attributes.className].filter(Boolean).join(' ')}>
      {caption && <caption className="visually-hidden">{caption}</caption>}
      <thead>
        <tr>
          {shown.map(([header], i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: the columns are fixed; their place is who they are
            <th key={i} scope="col">
              {header}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows?.map((row, r) => (
          <tr key={rowKey(row, r)}>
            {shown.map(([header, cell], i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: as above
              <td key={i} data-label={typeof header === 'string' && header !== '' ? header : undefined}>
                {cell(row, r)}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  )
}
