/**
 * The OpenAPI document of the public API, as generated from the contract.
 * `pnpm --filter @petstore/contract openapi` writes it to `openapi.json`, the
 * committed copy that readers and diff tools see; a test fails while the two differ.
 */
import { writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { OpenApi } from "effect/http-api"
import { PetstoreApi } from "../src/index.ts"

export const committedDocumentPath = fileURLToPath(new URL("../openapi.json", import.meta.url))

/** The document exactly as committed: two-space JSON and a final newline. */
export const renderDocument = (): string => `${JSON.stringify(OpenApi.fromApi(PetstoreApi), null, 2)}\n`

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(committedDocumentPath, renderDocument())
  console.log(`wrote ${committedDocumentPath}`)
}
