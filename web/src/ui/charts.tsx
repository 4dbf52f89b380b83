// Charts of counts, with their numbers as text.

export interface Bar {
  key: string
  label: string
  value: number
}

const COLORS = ['#6b6b6b', '#0b57d0', '#137333', '#5b3a9e', '#b3261e', '#8a5a00', '#0a6b50']

/** A stacked bar of parts of a whole (e.g. sends per status), with its numbers as text beside it. */
export function ProgressBar({ bars, total, label }: { bars: Bar[]; total: number; label: string }) {
  const whole = Math.max(
    total,
    bars.reduce((sum, b) => sum + b.value, 0),
    1,
  )
  let x = 0
  return (
    <figure className="chart">
      <svg viewBox="0 0 1000 24" width="100%" height="24" role="img" aria-label={label}>
        <rect x="0" y="0" width="1000" height="24" fill="#e8e8e8" />
        {bars.map((bar, i) => {
          const width = (bar.value / whole) * 1000
          const rect = <rect key={bar.key} x={x} y="0" width={width} height="24" fill={COLORS[i % COLORS.length]} />
          x += width
          return rect
        })}
      </svg>
      <figcaption>
        <ul className="legend">
          {bars.map((bar, i) => (
            <li key={bar.key} data-key={bar.key}>
              <svg width="12" height="12" aria-hidden="true">
                <rect width="12" height="12" fill={COLORS[i % COLORS.length]} />
              </svg>{' '}
              {bar.label}: <span data-testid={`count-${bar.key}`}>{bar.value}</span>
            </li>
          ))}
        </ul>
      </figcaption>
    </figure>
  )
}

/** A bar chart of counts, one column each; the numbers are in the table the chart stands for. */
export function BarChart({ bars, label }: { bars: Bar[]; label: string }) {
  const max = Math.max(1, ...bars.map((b) => b.value))
  const step = 1000 / Math.max(bars.length, 1)
  return (
    <svg viewBox="0 0 1000 160" width="100%" height="160" role="img" aria-label={label} className="chart">
      {bars.map((bar, i) => {
        const height = (bar.value / max) * 100
        return (
          <g key={bar.key}>
            <rect
              x={i * step + step * 0.2}
              y={130 - height}
              width={step * 0.6}
              height={height}
              fill={COLORS[i % COLORS.length]}
            />
            <text x={i * step + step / 2} y="150" textAnchor="middle" fontSize="14">
              {bar.label}
            </text>
            <text x={i * step + step / 2} y={125 - height} textAnchor="middle" fontSize="14">
              {bar.value}
            </text>
          </g>
        )
      })}
    </svg>
  )
}
