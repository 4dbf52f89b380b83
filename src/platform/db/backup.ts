import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { btree_gin } from '@electric-sql/pglite/contrib/btree_gin'
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm'
import * as tar from 'tar'
import { SECRET_KEY_FILE } from '../secrets.ts'

/**
 * A backup of the embedded data directory: one tar file holding `manifest.json`, `pgdata.tar.gz` (PGlite's own dump
 * of its data directory, taken on its one connection, so consistent) and `secret.key` (the key that encrypts stored
 * secrets; without it they cannot be read), named as such. A server deployment backs up with pg_dump instead.
 */
export const BACKUP_DATABASE = 'pgdata.tar.gz'
export const BACKUP_MANIFEST = 'manifest.json'

export interface BackupManifest {
  format: 'herold-backup/1'
  created_at: string
  /** false when the key came from HEROLD_SECRET_KEY: keep that value with the backup */
  secret_key_included: boolean
  database_bytes: number
}

export async function writeBackup(input: {
  dump: Blob
  dataDir: string
  out: string
  now: Date
}): Promise<BackupManifest & { out: string; bytes: number }> {
  if (existsSync(input.out)) throw new Error(`${input.out} exists; choose a new file name`)
  const staging = mkdtempSync(path.join(tmpdir(), 'herold-backup-'))
  try {
    const database = Buffer.from(await input.dump.arrayBuffer())
    writeFileSync(path.join(staging, BACKUP_DATABASE), database)
    const keyFile = path.join(input.dataDir, SECRET_KEY_FILE)
    const withKey = existsSync(keyFile)
    if (withKey) writeFileSync(path.join(staging, SECRET_KEY_FILE), readFileSync(keyFile), { mode: 0o600 })
    const manifest: BackupManifest = {
      format: 'herold-backup/1',
      created_at: input.now.toISOString(),
      secret_key_included: withKey,
      database_bytes: database.length,
    }
    writeFileSync(path.join(staging, BACKUP_MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`)
    mkdirSync(path.dirname(input.out), { recursive: true })
    await tar.create({ file: input.out, cwd: staging, portable: true }, readdirSync(staging).sort())
    return { ...manifest, out: input.out, bytes: statSync(input.out).size }
  } finally {
    rmSync(staging, { recursive: true, force: true })
  }
}

/** Restores a backup into an empty (or missing) data directory. */
export async function restoreBackup(input: { file: string; dataDir: string }): Promise<BackupManifest> {
  if (!existsSync(input.file)) throw new Error(`${input.file} does not exist`)
  if (existsSync(input.dataDir) && readdirSync(input.dataDir).length > 0) {
    throw new Error(`${input.dataDir} is not empty; restore into an empty data directory`)
  }
  const staging = mkdtempSync(path.join(tmpdir(), 'herold-restore-'))
  try {
    await tar.extract({ file: input.file, cwd: staging })
    const manifestFile = path.join(staging, BACKUP_MANIFEST)
    if (!existsSync(manifestFile) || !existsSync(path.join(staging, BACKUP_DATABASE))) {
      throw new Error(`${input.file} is not a Herold backup`)
    }
    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as BackupManifest
    if (manifest.format !== 'herold-backup/1') throw new Error(`unknown backup format ${String(manifest.format)}`)
    mkdirSync(input.dataDir, { recursive: true })
    const dump = new Blob([readFileSync(path.join(staging, BACKUP_DATABASE))])
    const database = await PGlite.create(input.dataDir, { loadDataDir: dump, extensions: { pg_trgm, btree_gin } })
    await database.query('SELECT 1')
    await database.close()
    const key = path.join(staging, SECRET_KEY_FILE)
    if (existsSync(key)) writeFileSync(path.join(input.dataDir, SECRET_KEY_FILE), readFileSync(key), { mode: 0o600 })
    return manifest
  } finally {
    rmSync(staging, { recursive: true, force: true })
  }
}
