import module from 'node:module'

/**
 * Packages whose own relative imports are resolved here instead of by Node's ESM resolver. For every file it resolves,
 * Node looks up the package's package.json to learn the file's format and parses its `exports` anew; drizzle-orm's
 * package.json is 178 KB and the server loads about a thousand of its files, so a start parsed some 180 MB of JSON
 * (the heap grew by that much, the RSS by 230 MB, and the start took 5 s longer on this machine). These packages are
 * ES modules throughout ("type": "module", every relative import a full file name), so a relative import is the file
 * it names, as an ES module.
 */
const PACKAGES = ['/node_modules/drizzle-orm/']

/**
 * Installs the resolve hook (Node 22.15 and later; without `registerHooks` nothing changes but the memory). Call it
 * before the modules that import these packages are loaded: the CLI entry does, then imports the rest dynamically.
 */
export function installDrizzleResolveHook(): void {
  if (typeof module.registerHooks !== 'function') return
  module.registerHooks({
    resolve(specifier, context, nextResolve) {
      const parent = context.parentURL
      if (
        parent !== undefined &&
        (specifier.startsWith('./') || specifier.startsWith('../')) &&
        specifier.endsWith('.js') &&
        PACKAGES.some((name) => parent.includes(name))
      ) {
        return { url: new URL(specifier, parent).href, format: 'module', shortCircuit: true }
      }
      return nextResolve(specifier, context)
    },
  })
}
