import { crc32, createDeflateRaw } from 'node:zlib'

/**
 * A ZIP (a DOCX by its signature and part name) with one entry, word/document.xml, deflated from `inflated` bytes of
 * 'a': about 1/1000 of that on disk. `declared` is what its headers say it inflates to (the truth unless given).
 */
export async function docxBomb(inflated: number, declared = inflated): Promise<Buffer> {
  const deflate = createDeflateRaw({ level: 9 })
  const pieces: Buffer[] = []
  deflate.on('data', (piece: Buffer) => pieces.push(piece))
  const done = new Promise((resolve) => deflate.on('end', resolve))
  const chunk = Buffer.alloc(1024 * 1024, 0x61)
  let crc = 0
  for (let written = 0; written < inflated; written += chunk.length) {
    crc = crc32(chunk, crc)
    if (!deflate.write(chunk)) await new Promise((resolve) => deflate.once('drain', resolve))
  }
  deflate.end()
  await done
  const compressed = Buffer.concat(pieces)
  const name = Buffer.from('word/document.xml')
  const local = Buffer.alloc(30)
  local.writeUInt32LE(0x04034b50, 0)
  local.writeUInt16LE(20, 4)
  local.writeUInt16LE(8, 8) // deflate
  local.writeUInt32LE(crc >>> 0, 14)
  local.writeUInt32LE(compressed.length, 18)
  local.writeUInt32LE(declared, 22)
  local.writeUInt16LE(name.length, 26)
  const central = Buffer.alloc(46)
  central.writeUInt32LE(0x02014b50, 0)
  central.writeUInt16LE(20, 4)
  central.writeUInt16LE(20, 6)
  central.writeUInt16LE(8, 10)
  central.writeUInt32LE(crc >>> 0, 16)
  central.writeUInt32LE(compressed.length, 20)
  central.writeUInt32LE(declared, 24)
  central.writeUInt16LE(name.length, 28)
  central.writeUInt32LE(0, 42)
  const directoryOffset = local.length + name.length + compressed.length
  const directorySize = central.length + name.length
  const end = Buffer.alloc(22)
  end.writeUInt32LE(0x06054b50, 0)
  end.writeUInt16LE(1, 8)
  end.writeUInt16LE(1, 10)
  end.writeUInt32LE(directorySize, 12)
  end.writeUInt32LE(directoryOffset, 16)
  return Buffer.concat([local, name, compressed, central, name, end])
}
