import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'

// `npm install` / `npm ci` build the web app (the `prepare` script) into web/dist, which Fastify serves at `/`.
// An install without dev dependencies (npm ci --omit=dev) has no Vite: it skips the build and says so.
const root = path.resolve(import.meta.dirname, '..')
const require = createRequire(import.meta.url)
let vite: typeof import('vite')
let react: typeof import('@vitejs/plugin-react').default
try {
  require.resolve('vite')
  vite = await import('vite')
  react = (await import('@vitejs/plugin-react')).default
} catch {
  console.log('web app not built: Vite is not installed (dev dependencies omitted); GET / shows a plain page')
  process.exit(0)
}
const started = Date.now()
await vite.build({
  root: path.join(root, 'web'),
  configFile: false,
  logLevel: 'warn',
  plugins: [react()],
  build: {
    outDir: path.join(root, 'web/dist'),
    emptyOutDir: true,
    assetsDir: 'assets',
    // no inline scripts or styles: the page's Content Security Policy allows only files from 'self'
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
})
if (!existsSync(path.join(root, 'web/dist/index.html'))) throw new Error('the web build wrote no index.html')
console.log(`web app built into web/dist in ${((Date.now() - started) / 1000).toFixed(1)} s`)
