/**
 * The OpenAPI documents of the public API and of the admin API, as generated
 * from the contract. `pnpm --filter @petstore/contract openapi` writes them to
 * `openapi.json` and `openapi.admin.json`, the committed copies that readers
 * and diff tools see; a test fails while a copy and its source differ.
 */
import { writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { OpenApi } from "effect/http-api"
import { AdminApi, PetstoreApi } from "../src/index.ts"

export const committedDocumentPath = fileURLToPath(new URL("../openapi.json", import.meta.url))
export const committedAdminDocumentPath = fileURLToPath(new URL("../openapi.admin.json", import.meta.url))

/** The document exactly as committed: two-space JSON and a final newline. */
export const renderDocument = (): string => `${JSON.stringify(OpenApi.fromApi(PetstoreApi), null, 2)}\n`

/** The admin API's document, committed the same way. */
export const renderAdminDocument = (): string => `${JSON.stringify(OpenApi.fromApi(AdminApi), null, 2)}\n`

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(committedDocumentPath, renderDocument())
  writeFileSync(committedAdminDocumentPath, renderAdminDocument())
  console.log(`wrote ${committedDocumentPath} and ${committedAdminDocumentPath}`)
}
