import type { Tool } from './tool.ts'
import { namedTools } from './tools/named.ts'

/** Every tool of the tool server, in the order tools/list shows them; names are unique (checked by a test). */
export const catalogue: Tool[] = [...namedTools]
