import * as core from "kubernetes-models/v1"
import * as apps from "kubernetes-models/apps/v1"
import * as networking from "kubernetes-models/networking.k8s.io/v1"
import * as policy from "kubernetes-models/policy/v1"
import { missingTool } from "@petstore/test-support"
import { describe, expect, it } from "vitest"
import {
  kustomize,
  type KubernetesObject,
  measuredMemoryMiB,
  onPath,
  read,
  serverVariables,
  shutdownFacts
} from "./repository.ts"

const kubectl = onPath("kubectl")
const models: Record<string, Record<string, unknown>> = {
  v1: core,
  "apps/v1": apps,
  "networking.k8s.io/v1": networking,
  "policy/v1": policy
}

const mebibytes = (quantity: string) => {
  const [, amount, unit] = /^(\d+)(Mi|Gi)$/.exec(quantity)!
  return Number(amount) * (unit === "Gi" ? 1024 : 1)
}

describe.skipIf(
  kubectl === undefined && missingTool("kubectl is not on PATH (Debian's kubernetes-client, or CI's .ci/run)").skip
)(
  "the Kubernetes kit, rendered by kubectl kustomize",
  () => {
    const folders = [
      "deploy/kubernetes/base",
      "deploy/kubernetes/overlays/example",
      "deploy/kubernetes/overlays/redis-quotas"
    ]
    const rendered = new Map(folders.map((folder) => [folder, kustomize(kubectl!, folder)]))
    const objects = rendered.get("deploy/kubernetes/overlays/example")!
    const one = (kind: string, name?: string) => {
      const found = objects.filter((object) =>
        object.kind === kind && (name === undefined || object.metadata.name === name)
      )
      expect(found, `${kind} ${name ?? ""}`).toHaveLength(1)
      return found[0]!
    }
    const deployment = one("Deployment")
    const pod = deployment.spec.template.spec
    const server = pod.containers.find((container: { name: string }) => container.name === "server")
    const config = one("ConfigMap").data!
    const portNamed = (name: string) => server.ports.find((port: { name: string }) => port.name === name).containerPort

    it.each(folders)("%s: every object validates against the Kubernetes schemas", (folder) => {
      for (const object of rendered.get(folder)!) {
        const Model = models[object.apiVersion]?.[object.kind] as
          | (new(data: unknown) => { validate(): void })
          | undefined
        expect(Model, `${object.apiVersion} ${object.kind}`).toBeDefined()
        expect(() => new Model!(object).validate(), `${object.kind} ${object.metadata.name}`).not.toThrow()
      }
    })

    it("runs three replicas, one at a time out of service at most (rollout and PodDisruptionBudget)", () => {
      expect(deployment.spec.replicas).toBe(3)
      expect(deployment.spec.strategy.rollingUpdate.maxUnavailable).toBe(0)
      expect(one("PodDisruptionBudget").spec.maxUnavailable).toBe(1)
    })

    it("sets only variables the server reads, and secrets only as files", () => {
      const variables = serverVariables()
      const set = [
        ...Object.keys(config),
        ...pod.initContainers.concat(pod.containers).flatMap(
          (container: { env?: Array<{ name: string }> }) => (container.env ?? []).map((env) => env.name)
        )
      ]
      for (const name of set) expect(variables, name).toContain(name)
      expect(set).not.toContain("ADMIN_TOKEN")
      expect(set).not.toContain("DATABASE_URL")
      for (const container of [...pod.initContainers, ...pod.containers]) {
        for (const env of container.env) expect(env.value, container.name).toMatch(/^\/run\/secrets\/[a-z-]+\/[a-z-]+$/)
      }
    })

    it("migrates as the schema's owner and serves as the row-only role, each from its own Secret (docs/postgresql.md, \"Roles and migrations\")", () => {
      /** The Secret behind the file a container's variable names, through the container's mounts. */
      const secretBehind = (
        container: { env: Array<{ name: string; value: string }>; volumeMounts: Array<any> },
        name: string
      ) => {
        const file = container.env.find((env) => env.name === name)?.value
        expect(file, name).toBeDefined()
        const mount = container.volumeMounts.find((mount) => file!.startsWith(`${mount.mountPath}/`))
        expect(mount, file).toBeDefined()
        const volume = pod.volumes.find((volume: { name: string }) => volume.name === mount.name)
        return { secretName: volume.secret?.secretName as string, key: file!.slice(mount.mountPath.length + 1) }
      }
      const migrate = pod.initContainers.find((container: { name: string }) => container.name === "migrate")
      const owner = secretBehind(migrate, "DATABASE_URL_FILE")
      const runtime = secretBehind(server, "DATABASE_URL_FILE")
      expect(owner).toEqual({ secretName: "petstore-migrate", key: "database-url" })
      expect(runtime).toEqual({ secretName: "petstore-secrets", key: "database-url" })
      expect(secretBehind(server, "ADMIN_TOKEN_FILE")).toEqual({ secretName: "petstore-secrets", key: "admin-token" })
      // Neither sees the other's: the owner's password never reaches a serving pod, nor the admin token the init container.
      const secretsMountedBy = (container: { volumeMounts: Array<{ name: string }> }) =>
        container.volumeMounts.flatMap((mount) =>
          pod.volumes.filter((volume: { name: string; secret?: unknown }) =>
            volume.name === mount.name && volume.secret
          )
            .map((volume: { secret: { secretName: string } }) => volume.secret.secretName)
        )
      expect(secretsMountedBy(migrate)).toEqual(["petstore-migrate"])
      expect(secretsMountedBy(server)).toEqual(["petstore-secrets"])
      // The server role may not migrate, so it must not try at start-up; the init container already has.
      expect(config.MIGRATE_ON_START).toBe("false")
    })

    it("names both Secrets, with the keys the containers read, where the example overlay says how to create them", () => {
      const overlay = read("deploy/kubernetes/overlays/example/kustomization.yaml")
      const guide = read("deploy/README.md")
      for (const text of [overlay, guide]) {
        expect(text).toMatch(
          /create secret generic petstore-secrets[^\n]*\\\n[^\n]*--from-file=admin-token=[^\n]*--from-file=database-url=/
        )
        expect(text).toMatch(/create secret generic petstore-migrate --from-file=database-url=/)
      }
    })

    it("probes the server's health paths on the ports the ConfigMap gives it", () => {
      expect(portNamed("http")).toBe(Number(config.PORT))
      expect(portNamed("admin")).toBe(Number(config.ADMIN_PORT))
      expect(server.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "http" })
      expect(server.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "http" })
      expect(server.startupProbe.httpGet).toEqual({ path: "/healthz", port: "http" })
      // /readyz waits up to 2 s for the database: a probe must wait longer than that.
      expect(server.readinessProbe.timeoutSeconds).toBeGreaterThan(2)
    })

    it("gives the drain and the stop the arithmetic of docs/fleet.md", () => {
      const drain = Number(config.SHUTDOWN_DRAIN_SECONDS)
      const notice = server.readinessProbe.periodSeconds * server.readinessProbe.failureThreshold
      expect(drain).toBeGreaterThanOrEqual(2 * notice)
      const { poolCloseSeconds, requestTimeoutSeconds } = shutdownFacts()
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(drain + requestTimeoutSeconds + poolCloseSeconds)
    })

    it("runs every container as a non-root user on a read-only root, without capabilities, under seccomp", () => {
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } })
      expect(pod.securityContext.runAsUser).toBeGreaterThan(0)
      expect(pod.automountServiceAccountToken).toBe(false)
      for (const container of [...pod.initContainers, ...pod.containers]) {
        expect(container.securityContext, container.name).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ["ALL"] }
        })
      }
    })

    it("migrates before the servers start, with the server's migrate command", () => {
      expect(pod.initContainers.map((container: { name: string }) => container.name)).toEqual(["migrate"])
      expect(pod.initContainers[0].image).toBe(server.image)
      expect([...pod.initContainers[0].command, ...pod.initContainers[0].args]).toEqual([
        "node",
        "dist/main.js",
        "migrate"
      ])
    })

    it("asks for memory from what the server measured, with room above its peak under load", () => {
      const { idle, underLoad } = measuredMemoryMiB()
      expect(mebibytes(server.resources.requests.memory)).toBeGreaterThanOrEqual(idle)
      expect(mebibytes(server.resources.requests.memory)).toBeGreaterThanOrEqual(underLoad)
      expect(mebibytes(server.resources.limits.memory)).toBeGreaterThanOrEqual(Math.ceil(underLoad * 1.25))
    })

    it("serves the public port to anyone and the admin port only inside the cluster, to whom the policy admits", () => {
      const service = one("Service", "petstore")
      const admin = one("Service", "petstore-admin")
      expect(service.spec.ports.map((port: { targetPort: string }) => port.targetPort)).toEqual(["http"])
      expect(admin.spec.type).toBe("ClusterIP")
      expect(admin.spec.ports.map((port: { targetPort: string }) => port.targetPort)).toEqual(["admin"])
      expect(config.ADMIN_HOST).toBe("0.0.0.0")
      const policy = one("NetworkPolicy")
      expect(policy.spec.policyTypes).toEqual(["Ingress"])
      const rules: Array<{ from?: Array<unknown>; ports: Array<{ port: string }> }> = policy.spec.ingress
      expect(rules.find((rule) => rule.ports.some((port) => port.port === "http"))?.from).toBeUndefined()
      const adminRule = rules.find((rule) => rule.ports.some((port) => port.port === "admin"))!
      expect(adminRule.from?.length).toBeGreaterThan(0)
      expect(adminRule.ports).toEqual([{ port: "admin" }])
    })

    it("lets Prometheus scrape /metrics on the admin port without the admin token", () => {
      const annotations = deployment.spec.template.metadata.annotations
      expect(annotations).toEqual({
        "prometheus.io/scrape": "true",
        "prometheus.io/port": config.ADMIN_PORT,
        "prometheus.io/path": "/metrics"
      })
      expect(config.METRICS_PUBLIC).toBe("true")
    })

    it("counts quotas across replicas in PostgreSQL", () => {
      expect(config.QUOTA_STORE).toBe("postgres")
    })

    it("the redis-quotas overlay counts them in a Redis Cluster, its URL only as a file", () => {
      const redisObjects = rendered.get("deploy/kubernetes/overlays/redis-quotas")!
      const redisConfig = redisObjects.find((object) => object.kind === "ConfigMap")!.data!
      expect(redisConfig).toMatchObject({ QUOTA_STORE: "redis", REDIS_TYPE: "cluster", QUOTA_STORE_FAILURE: "closed" })
      const redisServer = redisObjects.find((object) => object.kind === "Deployment")!.spec.template.spec.containers
        .find((container: { name: string }) => container.name === "server")
      const env = Object.fromEntries(
        redisServer.env.map((variable: { name: string; value: string }) => [variable.name, variable.value])
      )
      expect(env.REDIS_URL_FILE).toBe("/run/secrets/petstore/redis-url")
      const variables = serverVariables()
      for (const name of [...Object.keys(redisConfig), ...Object.keys(env)]) expect(variables, name).toContain(name)
      expect(Object.keys(redisConfig)).not.toContain("REDIS_URL")
    })
  }
)

export type { KubernetesObject }
