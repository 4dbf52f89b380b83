import { randomUUID } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { copyFile, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { Readable } from 'node:stream'
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3'

/**
 * Where Herold keeps files it serves itself (inbound media, the media library). A disk directory in embedded mode;
 * S3-compatible object storage (HEROLD_STORAGE_URL) for a deployment of many processes. Keys are
 * `<account id>/<file id>`, unguessable.
 */
export interface Storage {
  /** stores the bytes under a new key inside the account's space; returns the key */
  put(accountId: string, data: Buffer, mime: string): Promise<string>
  /** stores a file from local disk (streamed, never read whole into memory); returns the key */
  putFile(accountId: string, file: string, mime: string): Promise<string>
  get(key: string): Promise<{ data: Buffer; mime: string } | null>
  /** the stored bytes as a stream, with their type and size */
  open(key: string): Promise<{ stream: Readable; mime: string; size: number } | null>
  delete(key: string): Promise<void>
}

const KEY = /^[0-9a-f-]{36}\/[0-9a-f-]{36}$/
const newKey = (accountId: string) => `${accountId}/${randomUUID()}`

/** Files under `<dir>/<account id>/<file id>` with the mime type in a `.mime` file beside it. */
export function diskStorage(dir: string): Storage {
  const fileOf = (key: string) => {
    if (!KEY.test(key)) return null
    return path.join(dir, key)
  }
  const store = async (accountId: string, mime: string, write: (file: string) => Promise<void>) => {
    const key = newKey(accountId)
    const file = path.join(dir, key)
    await mkdir(path.dirname(file), { recursive: true })
    await write(file)
    await writeFile(`${file}.mime`, mime)
    return key
  }
  return {
    put: (accountId, data, mime) => store(accountId, mime, (file) => writeFile(file, data)),
    putFile: (accountId, source, mime) => store(accountId, mime, (file) => copyFile(source, file)),
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
    async open(key) {
      const file = fileOf(key)
      if (!file) return null
      try {
        const [info, mime] = await Promise.all([stat(file), readFile(`${file}.mime`, 'utf8')])
        return { stream: createReadStream(file), mime, size: info.size }
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
  const put = async (accountId: string, data: Buffer, mime: string) => {
    const key = newKey(accountId)
    files.set(key, { data, mime })
    return key
  }
  return {
    put,
    putFile: async (accountId, file, mime) => put(accountId, await readFile(file), mime),
    get: async (key) => files.get(key) ?? null,
    async open(key) {
      const file = files.get(key)
      return file ? { stream: Readable.from([file.data]), mime: file.mime, size: file.data.length } : null
    },
    delete: async (key) => {
      files.delete(key)
    },
  }
}

/**
 * `s3://[access key:secret@]bucket[/prefix]?endpoint=https://...&region=...&path_style=true`; without credentials in
 * the address the SDK's usual chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, roles) applies.
 */
export function parseStorageUrl(raw: string): { bucket: string; prefix: string; client: S3ClientConfig } {
  const url = new URL(raw)
  if (url.protocol !== 's3:' || !url.hostname) throw new Error('HEROLD_STORAGE_URL must be s3://bucket?...')
  const endpoint = url.searchParams.get('endpoint') ?? undefined
  const client: S3ClientConfig = {
    region: url.searchParams.get('region') ?? 'us-east-1',
    ...(endpoint ? { endpoint } : {}),
    forcePathStyle: url.searchParams.get('path_style') === 'true' || Boolean(endpoint),
    // checksums only where the operation needs one: a streamed upload then goes as a plain body with its length,
    // not in aws-chunked encoding, which several S3-compatible stores do not decode
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  }
  if (url.username) {
    client.credentials = {
      accessKeyId: decodeURIComponent(url.username),
      secretAccessKey: decodeURIComponent(url.password),
    }
  }
  return { bucket: url.hostname, prefix: url.pathname.replace(/^\/+|\/+$/g, ''), client }
}

/** Objects in an S3-compatible bucket, the mime type as the object's Content-Type. */
export function s3Storage(storageUrl: string): Storage {
  const { bucket, prefix, client: options } = parseStorageUrl(storageUrl)
  // The AWS SDK (about 1 MB of modules, some 5 MB of a process's heap) loads on the first use of the bucket.
  let loaded: Promise<{ sdk: typeof import('@aws-sdk/client-s3'); client: S3Client }> | undefined
  const s3 = () => {
    loaded ??= import('@aws-sdk/client-s3').then((sdk) => ({ sdk, client: new sdk.S3Client(options) }))
    return loaded
  }
  const objectKey = (key: string) => (prefix ? `${prefix}/${key}` : key)
  const putObject = async (accountId: string, body: Buffer | Readable, mime: string, length: number) => {
    const key = newKey(accountId)
    const { sdk, client } = await s3()
    await client.send(
      new sdk.PutObjectCommand({
        Bucket: bucket,
        Key: objectKey(key),
        Body: body,
        ContentType: mime,
        ContentLength: length,
      }),
    )
    return key
  }
  const fetchObject = async (key: string) => {
    if (!KEY.test(key)) return null
    const { sdk, client } = await s3()
    try {
      return await client.send(new sdk.GetObjectCommand({ Bucket: bucket, Key: objectKey(key) }))
    } catch (error) {
      if (error instanceof sdk.NoSuchKey || (error as { name?: string }).name === 'NoSuchKey') return null
      throw error
    }
  }
  return {
    put: (accountId, data, mime) => putObject(accountId, data, mime, data.length),
    async putFile(accountId, file, mime) {
      const { size } = await stat(file)
      return putObject(accountId, createReadStream(file), mime, size)
    },
    async get(key) {
      const object = await fetchObject(key)
      if (!object?.Body) return null
      const data = Buffer.from(await object.Body.transformToByteArray())
      return { data, mime: object.ContentType ?? 'application/octet-stream' }
    },
    async open(key) {
      const object = await fetchObject(key)
      if (!object?.Body) return null
      return {
        stream: object.Body as Readable,
        mime: object.ContentType ?? 'application/octet-stream',
        size: Number(object.ContentLength ?? 0),
      }
    },
    async delete(key) {
      if (!KEY.test(key)) return
      const { sdk, client } = await s3()
      await client.send(new sdk.DeleteObjectCommand({ Bucket: bucket, Key: objectKey(key) }))
    },
  }
}

const byPlace = new Map<string, Storage>()

/** The storage of a data directory: `<data dir>/media` on disk, or in memory for `memory://`. */
export function storageFor(dataDir: string): Storage {
  const known = byPlace.get(dataDir)
  if (known) return known
  const storage = dataDir.startsWith('memory://') ? memoryStorage() : diskStorage(path.join(dataDir, 'media'))
  byPlace.set(dataDir, storage)
  return storage
}

/** The process's storage: object storage when HEROLD_STORAGE_URL is set, else the data directory's. */
export function storageOf(config: { dataDir: string; storageUrl?: string }): Storage {
  if (!config.storageUrl) return storageFor(config.dataDir)
  const known = byPlace.get(config.storageUrl)
  if (known) return known
  const storage = s3Storage(config.storageUrl)
  byPlace.set(config.storageUrl, storage)
  return storage
}
