// Loaded into a Herold server by bench/accept.ts and bench/e2e.ts (`node --import ./bench/count-statements.ts`):
// counts every query the process sends to PostgreSQL through `pg` (BEGIN and COMMIT included) and writes the count
// so far into BENCH_STATEMENTS_FILE on SIGUSR2, so the benchmark can say how many statements a request costs; with
// BENCH_STATEMENT_TEXTS=1 also the count of each statement (its first 100 characters) into that file + `.texts`.
// (PGlite's calls are not all seen from its prototype: the embedded run prints no count; it runs the same
// statements, less the reads its cache spares.)
import { writeFileSync } from 'node:fs'
import pg from 'pg'

let statements = 0
const texts = process.env.BENCH_STATEMENT_TEXTS === '1' ? new Map<string, number>() : null
const query = pg.Client.prototype.query as (...args: unknown[]) => unknown
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  statements++
  if (texts) {
    const first = args[0] as string | { text?: string }
    const text = (typeof first === 'string' ? first : (first?.text ?? '')).replace(/\s+/g, ' ').trim().slice(0, 100)
    texts.set(text, (texts.get(text) ?? 0) + 1)
  }
  return query.apply(this, args)
} as typeof pg.Client.prototype.query

const file = process.env.BENCH_STATEMENTS_FILE
if (file)
  process.on('SIGUSR2', () => {
    writeFileSync(file, String(statements))
    if (texts) writeFileSync(`${file}.texts`, JSON.stringify(Object.fromEntries(texts)))
  })
