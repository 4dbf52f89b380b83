// The CLI's entry (`npm start`, bin/herold.mjs). The module hooks go in first: the modules a static import names are
// all resolved before any code of the importing module runs, so the CLI itself (run.ts) is imported after them.
import { installModuleHooks } from '../platform/module-hooks.ts'

// glibc's malloc keeps what a server start frees (about 130 MB, mostly the WebAssembly compiler's work memory for
// the embedded database) in its heap for the life of the process. With these thresholds large blocks are mapped and
// returned on their own and the heap is trimmed. glibc reads them only at the start, so `serve` re-executes itself
// once with them set (same process id, same arguments), before anything is loaded. Set either to opt out.
if (
  process.platform === 'linux' &&
  process.argv[2] === 'serve' &&
  process.env.MALLOC_TRIM_THRESHOLD_ === undefined &&
  process.env.MALLOC_MMAP_THRESHOLD_ === undefined &&
  typeof process.execve === 'function'
) {
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
    ...process.env,
    MALLOC_TRIM_THRESHOLD_: '131072',
    MALLOC_MMAP_THRESHOLD_: '131072',
  })
}

installModuleHooks()
await import('./run.ts')
