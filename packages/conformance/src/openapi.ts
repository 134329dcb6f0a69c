import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js"
import { toCurl } from "./curl.ts"
import { describeResponse, type Exchange } from "./http.ts"
import type { Failure } from "./model.ts"

/**
 * Every response of the run checked against the deployment's own OpenAPI 3.1
 * document: its status declared for the operation, its media type, its body by
 * the declared schema and the declared required headers by theirs. Requests to
 * a path or method the document does not have are not judged: the document
 * cannot be wrong about them.
 */
export interface DocumentValidator {
  /** Why the exchange contradicts the document, `undefined` when it agrees, `unjudged` when the document says nothing about it. */
  readonly violation: (
    exchange: Exchange
  ) => { readonly expected: string; readonly received: string } | undefined | "unjudged"
}

type Json = Record<string, any>

const DOCUMENT_ID = "https://conformance.invalid/openapi.json"

const pointer = (segments: ReadonlyArray<string>) =>
  `#/${segments.map((s) => s.replace(/~/g, "~0").replace(/\//g, "~1")).join("/")}`

/** Follows a local `$ref` (`#/components/responses/…`) to the object it names, with the segments of where it is. */
const resolve = (
  document: Json,
  value: Json,
  at: ReadonlyArray<string>
): { value: Json; at: ReadonlyArray<string> } => {
  const ref = value?.$ref
  if (typeof ref !== "string" || !ref.startsWith("#/")) return { value, at }
  const segments = ref.slice(2).split("/").map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"))
  const target = segments.reduce<any>((node, segment) => node?.[segment], document)
  return resolve(document, target, segments)
}

const mediaType = (value: string | null) => (value ?? "").split(";")[0]!.trim().toLowerCase()

/** A header's value as the JSON value its schema describes: the number for an integer or number schema. */
const headerValue = (schema: Json | undefined, value: string): unknown => {
  const type = schema?.type
  if ((type === "integer" || type === "number") && /^-?\d+(\.\d+)?$/.test(value.trim())) return Number(value)
  return value
}

/** Ajv's first complaint, with the property it names (an extra or missing one). */
const firstError = (errors: ValidateFunction["errors"], what: string) => {
  const error = errors?.[0]
  if (error === undefined) return "invalid"
  const named = error.params.additionalProperty ?? error.params.missingProperty
  return `${what}${error.instancePath} ${error.message}${named === undefined ? "" : ` (${named})`}`
}

const templateMatcher = (template: string) =>
  new RegExp(
    `^${template.split(/\{[^}]+\}/).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("[^/]+")}/?$`
  )

/** `undefined` when `document` is not an OpenAPI 3.1 document with paths. */
export const makeDocumentValidator = (document: unknown, baseUrl: string): DocumentValidator | undefined => {
  if (typeof document !== "object" || document === null) return undefined
  const doc = document as Json
  if (typeof doc.openapi !== "string" || typeof doc.paths !== "object" || doc.paths === null) return undefined
  const ajv = new Ajv2020({ strict: false, allErrors: false, logger: false, validateFormats: false })
  ajv.addSchema(doc, DOCUMENT_ID)
  const compiled = new Map<string, ValidateFunction>()
  const validatorAt = (segments: ReadonlyArray<string>) => {
    const ref = `${DOCUMENT_ID}${pointer(segments)}`
    let validate = compiled.get(ref)
    if (validate === undefined) {
      validate = ajv.compile({ $ref: ref })
      compiled.set(ref, validate)
    }
    return validate
  }
  const paths = Object.keys(doc.paths).map((template) => ({ template, matches: templateMatcher(template) }))

  const violation = (exchange: Exchange) => {
    if (!exchange.url.startsWith(baseUrl)) return "unjudged" as const
    const path = new URL(exchange.url).pathname.slice(new URL(baseUrl).pathname.length) || "/"
    // The most literal template first: `/pets/mine` before `/pets/{petId}`.
    const match = paths
      .filter((candidate) => candidate.matches.test(path))
      .sort((a, b) => (a.template.match(/\{/g)?.length ?? 0) - (b.template.match(/\{/g)?.length ?? 0))[0]
    if (match === undefined) return "unjudged" as const
    const method = exchange.method === "HEAD" ? "get" : exchange.method.toLowerCase()
    const operation = doc.paths[match.template]?.[method]
    if (operation === undefined) return "unjudged" as const
    const where = `${exchange.method} ${match.template} ${exchange.status}`
    const status = String(exchange.status)
    const responses = operation.responses ?? {}
    const key = status in responses
      ? status
      : `${status[0]}XX` in responses
      ? `${status[0]}XX`
      : "default" in responses
      ? "default"
      : undefined
    if (key === undefined) {
      return {
        expected: `a status the document declares for ${exchange.method} ${match.template}: ${
          Object.keys(responses).join(", ")
        }`,
        received: describeResponse(exchange)
      }
    }
    const response = resolve(doc, responses[key], ["paths", match.template, method, "responses", key])

    for (const [name, declared] of Object.entries<Json>(response.value.headers ?? {})) {
      const header = resolve(doc, declared, [...response.at, "headers", name])
      const value = exchange.headers.get(name)
      if (value === null) {
        if (header.value.required === true) {
          return {
            expected: `${where}: the header ${name}, which the document declares required`,
            received: describeResponse(exchange, [name])
          }
        }
        continue
      }
      if (header.value.schema === undefined) continue
      const validate = validatorAt([...header.at, "schema"])
      if (!validate(headerValue(resolve(doc, header.value.schema, []).value, value))) {
        return {
          expected: `${where}: ${name} as the document's schema says`,
          received: `${name}: ${value} (${firstError(validate.errors, name)})`
        }
      }
    }

    const content: Json | undefined = response.value.content
    if (exchange.method === "HEAD") return undefined
    if (content === undefined || Object.keys(content).length === 0) {
      return exchange.text === ""
        ? undefined
        : { expected: `${where}: no body, as the document declares none`, received: describeResponse(exchange) }
    }
    const type = mediaType(exchange.headers.get("content-type"))
    const declaredType = Object.keys(content).find((candidate) => mediaType(candidate) === type)
    if (declaredType === undefined) {
      return {
        expected: `${where}: Content-Type ${Object.keys(content).join(" or ")}, as the document declares`,
        received: describeResponse(exchange, ["content-type"])
      }
    }
    const schema = content[declaredType]?.schema
    if (schema === undefined || !/json/.test(type)) return undefined
    if (exchange.json === undefined) return { expected: `${where}: a JSON body`, received: describeResponse(exchange) }
    const validate = validatorAt([...response.at, "content", declaredType, "schema"])
    if (!validate(exchange.json)) {
      return {
        expected: `${where}: a body valid against the document's schema`,
        received: `${firstError(validate.errors, "body")}: ${describeResponse(exchange)}`
      }
    }
    return undefined
  }
  return { violation }
}

export interface DocumentTally {
  readonly checked: number
  readonly broken: number
  readonly first: Failure | undefined
}

/** Collects, over the run, how many responses the document judged and the first it contradicts. */
export const makeDocumentObserver = (validator: DocumentValidator) => {
  let checked = 0
  let broken = 0
  let first: Failure | undefined
  return {
    observe: (exchange: Exchange) => {
      const violation = validator.violation(exchange)
      if (violation === "unjudged") return
      checked++
      if (violation === undefined) return
      broken++
      first ??= { request: toCurl(exchange), ...violation }
    },
    tally: (): DocumentTally => ({ checked, broken, first })
  }
}

/**
 * A webhook delivery's body judged by the document's top-level `webhooks` (OpenAPI 3.1): the request body schema
 * of `webhooks[<event type>].post`. `undescribed` when the document describes no such webhook.
 */
export const makeWebhookPayloadValidator = (document: unknown) => {
  const doc = document as Json
  const ajv = new Ajv2020({ strict: false, allErrors: false, logger: false, validateFormats: false })
  ajv.addSchema(doc, DOCUMENT_ID)
  const compiled = new Map<string, ValidateFunction>()
  return (type: string, body: unknown): string | undefined | "undescribed" => {
    const operation = doc.webhooks?.[type]?.post
    if (typeof operation !== "object" || operation === null) return "undescribed"
    const requestBody = resolve(doc, operation.requestBody, ["webhooks", type, "post", "requestBody"])
    const declared = Object.keys(requestBody.value?.content ?? {}).find((media) =>
      mediaType(media) === "application/json"
    )
    if (declared === undefined || requestBody.value.content[declared].schema === undefined) return "undescribed"
    const ref = `${DOCUMENT_ID}${pointer([...requestBody.at, "content", declared, "schema"])}`
    let validate = compiled.get(ref)
    if (validate === undefined) {
      validate = ajv.compile({ $ref: ref })
      compiled.set(ref, validate)
    }
    return validate(body) ? undefined : firstError(validate.errors, "body")
  }
}
