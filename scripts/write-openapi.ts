import { writeFileSync } from 'node:fs'
import { generateOpenApiDocument } from './openapi-document.ts'

// Regenerates the committed OpenAPI document: run `npm run openapi` after changing a route or schema.
const target = new URL('../openapi/v1.json', import.meta.url)
writeFileSync(target, await generateOpenApiDocument())
console.log(`wrote ${target.pathname}`)
