import { describe, expect, it } from "vitest"
import { read } from "./repository.ts"

/** One version: the server package's is the release's (CHANGELOG.md says so). */
const version = (JSON.parse(read("apps/server/package.json")) as { version: string }).version

describe("the release", () => {
  it("is MIT-licensed, as every package declares", () => {
    expect(read("LICENSE")).toMatch(/^MIT License\n/)
    for (const path of ["packages/contract/package.json", "packages/conformance/package.json"]) {
      expect((JSON.parse(read(path)) as { license: string }).license, path).toBe("MIT")
    }
  })

  it("has one version, which the changelog, the OpenAPI documents, the images and the example overlay carry", () => {
    // "Unreleased" collects what the next release brings; the latest release's heading is the version.
    expect(/^## (?!Unreleased)(\S+)/m.exec(read("CHANGELOG.md"))![1]).toBe(version)
    for (const path of ["packages/contract/openapi.json", "packages/contract/openapi.admin.json"]) {
      expect((JSON.parse(read(path)) as { info: { version: string } }).info.version, path).toBe(version)
    }
    const containerfile = read("deploy/images/Containerfile")
    expect(containerfile.match(/^ARG VERSION=(.*)$/gm)).toEqual([`ARG VERSION=${version}`, `ARG VERSION=${version}`])
    expect(containerfile).toContain(`org.opencontainers.image.licenses="MIT"`)
    expect(read("deploy/kubernetes/overlays/example/kustomization.yaml")).toContain(`newTag: "${version}"`)
    expect(read("docs/deploying.md")).toContain(`petstore-server:${version}`)
  })
})
