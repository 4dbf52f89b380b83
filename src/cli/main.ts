// The CLI's entry (`npm start`, bin/herold.mjs). The module hooks go in first: the modules a static import names are
// all resolved before any code of the importing module runs, so the CLI itself (run.ts) is imported after them.
import { installModuleHooks } from '../platform/module-hooks.ts'

installModuleHooks()
await import('./run.ts')
