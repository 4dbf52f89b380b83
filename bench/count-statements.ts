// Loaded into a Herold server by bench/accept.ts (`node --import ./bench/count-statements.ts`): counts every query
// the process sends to PostgreSQL through `pg` (BEGIN and COMMIT included) and writes the count so far into
// BENCH_STATEMENTS_FILE on SIGUSR2, so the benchmark can say how many statements a request costs. (PGlite's calls
// are not all seen from its prototype: the embedded run prints no count; it runs the same statements, less the
// reads its cache spares.)
import { writeFileSync } from 'node:fs'
import pg from 'pg'

let statements = 0
const query = pg.Client.prototype.query as (...args: unknown[]) => unknown
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  statements++
  return query.apply(this, args)
} as typeof pg.Client.prototype.query

const file = process.env.BENCH_STATEMENTS_FILE
if (file) process.on('SIGUSR2', () => writeFileSync(file, String(statements)))
