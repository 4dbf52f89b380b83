import { chmodSync, type Dirent, lstatSync, readdirSync } from 'node:fs'
import path from 'node:path'

/**
 * Files and directories Herold creates are its user's alone: 0600 and 0700. PGlite writes its data files as 0666
 * (the WAL and every table, whatever the umask), so the server's start takes group and other access off everything
 * under the data directory, the directory itself first (docs/operations.md#the-data-directory).
 */
export const PRIVATE_UMASK = 0o077

/** Takes group and other permissions off `dir` and everything under it (symbolic links left as they are); returns
 * how many entries it had to change. A missing directory changes nothing. */
export function restrictDataDir(dir: string): number {
  let changed = 0
  const restrict = (target: string, directory: boolean): void => {
    let mode: number
    try {
      const stat = lstatSync(target)
      if (stat.isSymbolicLink()) return
      mode = stat.mode & 0o7777
    } catch {
      return
    }
    if ((mode & 0o077) === 0) return
    chmodSync(target, directory ? 0o700 : mode & 0o700)
    changed++
  }
  const walk = (directory: string): void => {
    restrict(directory, true)
    let entries: Dirent[]
    try {
      entries = readdirSync(directory, { withFileTypes: true })
    } catch {
      return
    }
    for (const entry of entries) {
      const target = path.join(directory, entry.name)
      if (entry.isDirectory()) walk(target)
      else if (!entry.isSymbolicLink()) restrict(target, false)
    }
  }
  walk(dir)
  return changed
}
