// The CLI's entry (`npm start`, bin/herold.mjs). The module hooks go in first: the modules a static import names are
// all resolved before any code of the importing module runs, so the CLI itself (run.ts) is imported after them.
import { installDrizzleResolveHook } from '../platform/drizzle-resolve-hook.ts'
import { relaunchWithServerSettings } from './process-settings.ts'

// What any command creates (a backup, a restored data directory, the server's files) is its user's alone: 0600/0700.
process.umask(0o077)

// `serve` runs with glibc's and V8's memory settings (process-settings.ts): they are read only at a process's start,
// so it re-executes itself once with them (same process id, same arguments), before anything else is loaded.
if (process.argv[2] === 'serve') relaunchWithServerSettings()

installDrizzleResolveHook()
await import('./run.ts')
