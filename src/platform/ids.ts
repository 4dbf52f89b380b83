import { randomFillSync } from 'node:crypto'

// Time-ordered ids (UUID version 7, RFC 9562): the first 48 bits are the Unix time in milliseconds, so rows written
// one after another get ids that sort after each other and a primary key insert appends to the rightmost leaf of its
// index instead of landing on a random page (fewer page splits and full-page WAL images than random version 4 ids).
// PostgreSQL 15 has no uuidv7(); these are made here, in the process that writes the rows.

/** Random bytes drawn in bulk: one call to the system's generator for 256 ids. */
const pool = Buffer.alloc(16 * 256)
let poolOffset = pool.length

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))

/**
 * Makes UUIDs of version 7, each sorting after every one this generator made before (RFC 9562 section 6.2, method 1:
 * a 32-bit counter after the time, seeded at random each millisecond, then 42 random bits, so that a neighbour's id
 * cannot be guessed from one's own), within a millisecond and when the clock steps back. `clock` gives the wall
 * clock in milliseconds (tests pass their own).
 */
export function timeOrderedIds(clock: () => number = Date.now): () => string {
  let lastMs = -1
  let sequence = 0
  return () => {
    if (poolOffset + 16 > pool.length) {
      randomFillSync(pool)
      poolOffset = 0
    }
    const random = pool.subarray(poolOffset, poolOffset + 16)
    poolOffset += 16
    const now = clock()
    if (now > lastMs) {
      lastMs = now
      // 31 bits: room for 2^31 more ids in this millisecond before the counter carries into the time
      sequence = random.readUInt32BE(0) >>> 1
    } else if (sequence === 0xffffffff) {
      lastMs++
      sequence = 0
    } else {
      sequence++
    }
    return format(lastMs, sequence, random)
  }
}

function format(ms: number, sequence: number, random: Buffer): string {
  const hex = [
    Math.floor(ms / 2 ** 40) & 0xff,
    Math.floor(ms / 2 ** 32) & 0xff,
    (ms >>> 24) & 0xff,
    (ms >>> 16) & 0xff,
    (ms >>> 8) & 0xff,
    ms & 0xff,
    0x70 | ((sequence >>> 28) & 0x0f),
    (sequence >>> 20) & 0xff,
    0x80 | ((sequence >>> 14) & 0x3f),
    (sequence >>> 6) & 0xff,
    ((sequence << 2) & 0xfc) | (random[10] & 0x03),
    random[11],
    random[12],
    random[13],
    random[14],
    random[15],
  ].map((b) => HEX[b])
  return (
    `${hex[0]}${hex[1]}${hex[2]}${hex[3]}-${hex[4]}${hex[5]}-${hex[6]}${hex[7]}-${hex[8]}${hex[9]}-` +
    `${hex[10]}${hex[11]}${hex[12]}${hex[13]}${hex[14]}${hex[15]}`
  )
}

/** A time-ordered id (UUID version 7) from the process's one generator: ids made later sort after it. */
export const timeOrderedId: () => string = timeOrderedIds()
