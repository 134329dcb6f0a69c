/**
 * What the OpenAPI document says that Effect's generator cannot say from the
 * contract alone, added through its documented hook, `OpenApi.Transform`
 * (`OpenApi.annotations({ transform })`). Every schema added here is still
 * generated from an Effect Schema of the contract (`jsonSchemaOf`); the hooks
 * only put it where the generator does not:
 *
 * - a path or query parameter is described by its decoded value (an integer
 *   with bounds and default), where the generator describes the string it is
 *   decoded from;
 * - paths are relative to the servers, which end in the version segment `/v1`
 *   (spec §1), where the generator writes the API's prefix into every path;
 * - every error answer shares the one `Error` schema (spec §7), where the
 *   generator makes one schema per error class;
 * - the headers that the server's edge puts on every answer (rate limits,
 *   `Retry-After`, `WWW-Authenticate`, deprecation, caching, request id) are
 *   documented on the answers that carry them, where the generator knows only
 *   the headers a handler returns;
 * - links between operations, which the generator has no notion of.
 */
import { Schema } from "effect"
import type { OpenApi } from "effect/http-api"

type Json = Record<string, any>

/** The JSON Schema Effect generates for a schema, for a place its OpenAPI generator does not reach. */
export const jsonSchemaOf = (schema: Schema.Top): Json => {
  const document = Schema.toJsonSchemaDocument(schema)
  if (Object.keys(document.definitions).length > 0) {
    throw new Error("jsonSchemaOf: a schema placed by hand must not refer to component schemas")
  }
  return document.schema as Json
}

export interface DocumentedParameter {
  /** The decoded value: what the parameter means, e.g. an integer from 1 to 100 with a default. */
  readonly value?: Schema.Top
  /** How it is spelled on the wire, where the schema alone does not say it. */
  readonly description?: string
  /**
   * An example that documentation pages show but do not send unless the
   * reader ticks it (Scalar's `x-disabled`): for an optional parameter whose
   * every value has consequences (a cursor, an idempotency key), where an
   * empty one would be refused.
   */
  readonly offByDefault?: { readonly summary: string; readonly value?: string }
}

/**
 * An operation transform: the named parameters are described by their
 * decoded value (the generator describes path and query parameters by the
 * string they are decoded from, `{"type":"string"}`, which loses their type,
 * bounds and default), with a description and examples.
 */
export const describeParameters =
  (parameters: Readonly<Record<string, DocumentedParameter>>) => (operation: Json): Json => {
    const names = new Set(Object.keys(parameters))
    const described = (operation.parameters as Array<Json>).map((parameter) => {
      const documented = parameters[parameter.name]
      if (documented === undefined) return parameter
      names.delete(parameter.name)
      return {
        ...parameter,
        ...(documented.description === undefined ? {} : { description: documented.description }),
        ...(documented.value === undefined ? {} : { schema: jsonSchemaOf(documented.value) }),
        ...(documented.offByDefault === undefined ? {} : {
          examples: {
            [parameter.name]: {
              summary: documented.offByDefault.summary,
              ...(documented.offByDefault.value === undefined ? {} : { value: documented.offByDefault.value }),
              "x-disabled": true
            }
          }
        })
      }
    })
    if (names.size > 0) {
      throw new Error(`describeParameters: no parameter ${[...names].join(", ")} on ${operation.operationId}`)
    }
    return { ...operation, parameters: described }
  }

/** An operation transform: OpenAPI links from one of its answers to other operations, by their operation ids. */
export const linkResponse = (status: number, links: Readonly<Record<string, Json>>) => (operation: Json): Json => {
  const response = operation.responses[status]
  if (response === undefined) throw new Error(`linkResponse: ${operation.operationId} has no ${status} answer`)
  return { ...operation, responses: { ...operation.responses, [status]: { ...response, links } } }
}

/** A response header documented from an Effect Schema. */
export interface DocumentedHeader {
  readonly schema: Schema.Top
  readonly description: string
}

export interface DocumentRules {
  /** The API's path prefix (`/v1`): it moves from every path into the servers. */
  readonly basePath: `/${string}`
  /** The servers when the API declares none: relative to where the document is served. */
  readonly defaultServers: ReadonlyArray<OpenApi.OpenAPISpecServer>
  /** The one schema every error answer has, by its component name (generated from `HttpApi.AdditionalSchemas`). */
  readonly errorSchema: string
  /** Header names as the document spells them (the generator lower-cases them). */
  readonly headerNames: Readonly<Record<string, string>>
  /** Reusable header definitions, put under `components.headers`. */
  readonly headers: Readonly<Record<string, DocumentedHeader>>
  /** When an answer may lack a header, by a short name: `X-RateLimit-Limit.beforeAnyRoute` is that header, optional. */
  readonly absences: Readonly<Record<string, string>>
  /**
   * Which headers an answer carries, by operation and status: a name is a header every such answer has
   * (required); `{ name, absentWhen }` one that such an answer may lack, `absentWhen` naming one of `absences`.
   */
  readonly headersOf: (operationId: string, status: number, operation: Json) => ReadonlyArray<EdgeHeader>
}

/** A header of an answer: always sent, or sent except in the case `absentWhen` names. */
export type EdgeHeader = string | { readonly name: string; readonly absentWhen: string }

const isErrorStatus = (status: string) => Number(status) >= 400

/**
 * The API-level transform: servers and relative paths, one Error schema,
 * the edge's headers, header names spelled as the spec spells them.
 */
export const documentApi = (rules: DocumentRules) => (spec: Json): Json => {
  const errorRef = `#/components/schemas/${rules.errorSchema}`
  const errorSchema = spec.components.schemas[rules.errorSchema]
  if (errorSchema === undefined) throw new Error(`documentApi: no component schema ${rules.errorSchema}`)
  const replaced = new Set<string>()
  const headerName = (name: string) => rules.headerNames[name.toLowerCase()] ?? name

  /** An error class's schema may be replaced by Error only if Error describes every field it has. */
  const asErrorSchema = (schema: Json): Json => {
    // Several errors at one status (two 409s) are generated as a union of their schemas: each member must fit.
    const members: Array<Json> | undefined = schema.anyOf ?? schema.oneOf
    if (members !== undefined) {
      for (const member of members) asErrorSchema(member)
      return { $ref: errorRef }
    }
    const ref: string | undefined = schema.$ref
    if (ref === undefined || ref === errorRef) return { $ref: errorRef }
    const name = ref.replace("#/components/schemas/", "")
    // `_tag` names the class for `Effect.catchTag`: it is filled in by decoding and left out by encoding
    // (`Schema.tagDefaultOmit`), so no answer carries it.
    const fields = Object.keys(spec.components.schemas[name]?.properties ?? {}).filter((field) => field !== "_tag")
    const unknown = fields.filter((field) => !(field in errorSchema.properties))
    if (unknown.length > 0) {
      throw new Error(`documentApi: ${name} has fields the Error schema lacks: ${unknown.join(", ")}`)
    }
    replaced.add(name)
    return { $ref: errorRef }
  }

  const optional = new Map<string, { readonly name: string; readonly absentWhen: string }>()
  const paths: Json = {}
  for (const [path, item] of Object.entries(spec.paths as Json)) {
    if (!path.startsWith(`${rules.basePath}/`)) throw new Error(`documentApi: ${path} is not under ${rules.basePath}`)
    const operations: Json = {}
    for (const [method, operation] of Object.entries(item as Json)) {
      const responses: Json = {}
      for (const [status, response] of Object.entries(operation.responses as Json)) {
        const content = response.content === undefined ? undefined : Object.fromEntries(
          Object.entries(response.content as Json).map(([type, media]) => [
            type,
            isErrorStatus(status) ? { ...media, schema: asErrorSchema(media.schema) } : media
          ])
        )
        const generated = Object.fromEntries(
          Object.entries((response.headers ?? {}) as Json).map(([name, header]) => [headerName(name), header])
        )
        const edge = Object.fromEntries(
          rules.headersOf(operation.operationId, Number(status), operation).map((header) => {
            if (typeof header === "string") return [header, { $ref: `#/components/headers/${header}` }]
            // A reference cannot say `required: false`: a header that may be absent has a definition of its own.
            const component = `${header.name}.${header.absentWhen}`
            optional.set(component, header)
            return [header.name, { $ref: `#/components/headers/${component}` }]
          })
        )
        const headers = { ...edge, ...generated }
        responses[status] = {
          ...response,
          ...(content === undefined ? {} : { content }),
          ...(Object.keys(headers).length === 0 ? {} : { headers })
        }
      }
      const parameters = (operation.parameters as Array<Json>).map((parameter) =>
        parameter.in === "header" ? { ...parameter, name: headerName(parameter.name) } : parameter
      )
      operations[method] = { ...operation, parameters, responses }
    }
    paths[path.slice(rules.basePath.length)] = operations
  }

  const schemas = { ...spec.components.schemas }
  const text = JSON.stringify(paths)
  for (const name of replaced) {
    if (!text.includes(`"#/components/schemas/${name}"`)) delete schemas[name]
  }
  const documented = (name: string) => {
    const header = rules.headers[name]
    if (header === undefined) throw new Error(`documentApi: no header ${name}`)
    return header
  }
  // A header that some answers may lack and none always has (CORS's) has only its optional definition.
  const referenced = (name: string) => text.includes(`"#/components/headers/${name}"`)
  const headers = Object.fromEntries([
    ...Object.entries(rules.headers).filter(([name]) => referenced(name)).map(([name, header]) => [
      name,
      { description: header.description, required: true, schema: jsonSchemaOf(header.schema) }
    ]),
    ...[...optional].sort(([a], [b]) => a.localeCompare(b)).map(([component, { name, absentWhen }]) => {
      const absence = rules.absences[absentWhen]
      if (absence === undefined) throw new Error(`documentApi: no absence ${absentWhen}`)
      return [component, {
        description: `${documented(name).description}. Absent ${absence}`,
        required: false,
        schema: jsonSchemaOf(documented(name).schema)
      }]
    })
  ])
  const { openapi, info, servers, tags, security, components, ...rest } = spec
  return {
    openapi,
    info,
    servers: servers ?? rules.defaultServers,
    tags,
    security,
    ...rest,
    paths,
    components: { ...components, schemas, headers }
  }
}

/**
 * An API-level transform: component schemas that Effect names after a class's encoded side (`ApiKeyEncoded`, for
 * `Schema.Class`) take the class's name, as the public document's do, unless that name is taken.
 */
export const renameEncodedSchemas = (spec: Json): Json => {
  const names = Object.keys(spec.components.schemas)
  const renames = names.flatMap((name) => {
    const plain = name.replace(/Encoded$/u, "")
    return plain !== name && !names.includes(plain) ? [[name, plain] as const] : []
  })
  let text = JSON.stringify(spec)
  for (const [from, to] of renames) {
    text = text.replaceAll(`"#/components/schemas/${from}"`, `"#/components/schemas/${to}"`)
  }
  const renamed = JSON.parse(text) as Json
  renamed.components.schemas = Object.fromEntries(
    Object.entries(renamed.components.schemas as Json).map(([name, schema]) => [
      renames.find(([from]) => from === name)?.[1] ?? name,
      schema
    ])
  )
  return renamed
}

/**
 * An API-level transform: every answer at a status gets its description, where the error class's own (written for
 * the public API's callers) would mislead this API's readers.
 */
export const describeAnswers = (descriptions: Readonly<Record<number, string>>) => (spec: Json): Json => ({
  ...spec,
  paths: Object.fromEntries(
    Object.entries(spec.paths as Json).map(([path, item]) => [
      path,
      Object.fromEntries(
        Object.entries(item as Json).map(([method, operation]) => [method, {
          ...operation,
          responses: Object.fromEntries(
            Object.entries(operation.responses as Json).map(([status, response]) => [
              status,
              descriptions[Number(status)] === undefined
                ? response
                : { ...response, description: descriptions[Number(status)] }
            ])
          )
        }])
      )
    ])
  )
})
