import { writeFileSync } from 'node:fs'
import { generateAppDocument, generateOpenApiDocument } from './openapi-document.ts'

// Regenerates the committed OpenAPI document: run `npm run openapi` after changing a route or schema.
const target = new URL('../openapi/v1.json', import.meta.url)
writeFileSync(target, await generateOpenApiDocument())
console.log(`wrote ${target.pathname}`)
const appTarget = new URL('../openapi/app.json', import.meta.url)
writeFileSync(appTarget, await generateAppDocument())
console.log(`wrote ${appTarget.pathname}`)
