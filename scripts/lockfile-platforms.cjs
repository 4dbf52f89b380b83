// The registry this project installs from lacks biome's binaries for other platforms, so `npm install` leaves
// them out of package-lock.json and `npm ci` then refuses the lock. This adds the entries back (npm skips them
// on a platform they do not match). Run after `npm install` changes the lock: node scripts/lockfile-platforms.cjs
const fs = require('node:fs')
const path = require('node:path')

const file = path.join(__dirname, '..', 'package-lock.json')
const lock = JSON.parse(fs.readFileSync(file, 'utf8'))
const version = lock.packages['node_modules/@biomejs/biome'].version
const platforms = {
  'android-arm64': ['android', 'arm64'],
  'android-x64': ['android', 'x64'],
  'darwin-arm64': ['darwin', 'arm64'],
  'darwin-x64': ['darwin', 'x64'],
  'linux-arm64-musl': ['linux', 'arm64', 'musl'],
  'linux-x64-musl': ['linux', 'x64', 'musl'],
  'win32-arm64': ['win32', 'arm64'],
  'win32-x64': ['win32', 'x64'],
}
for (const [name, [os, cpu, libc]] of Object.entries(platforms)) {
  const key = `node_modules/@biomejs/cli-${name}`
  if (lock.packages[key]) continue
  lock.packages[key] = {
    version,
    cpu: [cpu],
    os: [os],
    ...(libc ? { libc: [libc] } : {}),
    optional: true,
    license: 'MIT OR Apache-2.0',
    engines: { node: '>=14.21.3' },
  }
}
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
fs.writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`)
