// node --import: an idle embedded database in the server's own thread (its V8 isolate), as `herold serve` without
// DATABASE_URL has, in a server that otherwise runs on PostgreSQL.
import './open-pglite.ts'
