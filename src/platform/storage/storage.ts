import { randomUUID } from 'node:crypto'
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'

/**
 * Where Herold keeps files it serves itself (inbound media). A disk directory in embedded mode; object storage
 * (S3-compatible) implements the same interface for a deployment of many processes.
 */
export interface Storage {
  /** stores the bytes under a new unguessable key inside the account's space; returns the key */
  put(accountId: string, data: Buffer, mime: string): Promise<string>
  get(key: string): Promise<{ data: Buffer; mime: string } | null>
  delete(key: string): Promise<void>
}

const KEY = /^[0-9a-f-]{36}\/[0-9a-f-]{36}$/

/** Files under `<dir>/<account id>/<file id>` with the mime type in a `.mime` file beside it. */
export function diskStorage(dir: string): Storage {
  const fileOf = (key: string) => {
    if (!KEY.test(key)) return null
    return path.join(dir, key)
  }
  return {
    async put(accountId, data, mime) {
      const key = `${accountId}/${randomUUID()}`
      const file = path.join(dir, key)
      await mkdir(path.dirname(file), { recursive: true })
      await writeFile(file, data)
      await writeFile(`${file}.mime`, mime)
      return key
    },
    async get(key) {
      const file = fileOf(key)
      if (!file) return null
      try {
        const [data, mime] = await Promise.all([readFile(file), readFile(`${file}.mime`, 'utf8')])
        return { data, mime }
      } catch {
        return null
      }
    },
    async delete(key) {
      const file = fileOf(key)
      if (!file) return
      await rm(file, { force: true })
      await rm(`${file}.mime`, { force: true })
    },
  }
}

/** In memory, for a throwaway (memory://) data directory. */
export function memoryStorage(): Storage {
  const files = new Map<string, { data: Buffer; mime: string }>()
  return {
    async put(accountId, data, mime) {
      const key = `${accountId}/${randomUUID()}`
      files.set(key, { data, mime })
      return key
    },
    get: async (key) => files.get(key) ?? null,
    delete: async (key) => {
      files.delete(key)
    },
  }
}

const byDataDir = new Map<string, Storage>()

/** The storage of a data directory: `<data dir>/media` on disk, or in memory for `memory://`. */
export function storageFor(dataDir: string): Storage {
  const known = byDataDir.get(dataDir)
  if (known) return known
  const storage = dataDir.startsWith('memory://') ? memoryStorage() : diskStorage(path.join(dataDir, 'media'))
  byDataDir.set(dataDir, storage)
  return storage
}
