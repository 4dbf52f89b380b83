/**
 * How deep a parsed JSON value nests (an object or array is one level, its members the next), counted without
 * recursion: a body of ten thousand nested arrays parses fine but overflows the stack of anything that walks it
 * recursively (structuredClone, Ajv, the serializer), which would answer 500 instead of the caller's 400.
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  if (value === null || typeof value !== 'object') return false
  const stack: Array<[object, number]> = [[value, 1]]
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [object, number]
    if (depth > max) return true
    const members = Array.isArray(node) ? node : Object.values(node)
    for (const member of members) {
      if (member !== null && typeof member === 'object') stack.push([member, depth + 1])
    }
  }
  return false
}

/** The deepest nesting a JSON request body may have (the tool arguments allow less: src/platform/tools/tool.ts). */
export const MAX_BODY_DEPTH = 64
