import { MIGRATE_COMMAND } from "@petstore/server/db/Database"
import {
  blockContaining,
  createKey,
  createTestDatabase,
  freePort,
  missingTool,
  postgresAdminUrl,
  readmeRuntimeRoleStatements,
  substituted,
  type TestDatabase
} from "@petstore/test-support"
import { execFile, spawn } from "node:child_process"
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import postgres from "postgres"
import { kustomize, onPath, read, root } from "./repository.ts"

/**
 * The images as a platform team runs them, with podman: built from the Containerfile on the local base
 * (deploy/images/build-base-image.sh), the server on the CI PostgreSQL with a read-only root and secrets
 * from files, the conformance image against it, a drain on `podman stop`, a SIGKILL that loses no
 * acknowledged write, and PGlite's data kept on a volume across containers. Prints what it measured.
 */
const podmanBinary = onPath("podman")
const version = (JSON.parse(read("apps/server/package.json")) as { version: string }).version
const tag = `test-${process.pid}`
const serverImage = `localhost/petstore-server:${tag}`
const conformanceImage = `localhost/petstore-conformance:${tag}`
// crun refuses these machines' hybrid cgroups, and podman's default ulimits fail setrlimit here.
const global = ["--runtime", "runc", "--cgroup-manager=cgroupfs"]
const limits = ["--ulimit", "nofile=20000:20000", "--ulimit", "nproc=4096:4096"]
const GRACE_SECONDS = 45

interface Outcome {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}
const podman = (args: ReadonlyArray<string>, timeoutMs = 120_000): Promise<Outcome> =>
  new Promise((resolve) => {
    const child = spawn(podmanBinary!, [...global, ...args], { stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs)
    child.on("close", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
const ok = async (args: ReadonlyArray<string>, timeoutMs?: number) => {
  const outcome = await podman(args, timeoutMs)
  if (outcome.code !== 0) {
    throw new Error(`podman ${args.join(" ")} exited ${outcome.code}:\n${outcome.stderr}${outcome.stdout}`)
  }
  return outcome.stdout.trim()
}
const inspect = async (what: string, format: string) => ok(["inspect", what, "--format", format])

const waitFor = async (check: () => Promise<boolean>, timeoutMs: number, what: string) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  throw new Error(`${what}: not within ${timeoutMs} ms`)
}
const status = (url: string, init?: RequestInit) =>
  fetch(url, { ...init, signal: AbortSignal.timeout(5_000) }).then((response) => response.status, () => 0)

const mib = (bytes: number) => Math.round(bytes / 2 ** 20)
const measured: Array<string> = []

const needsRoot = process.getuid?.() !== 0
describe.skipIf(
  (podmanBinary === undefined && missingTool("podman is not on PATH (Debian's podman, buildah, runc)").skip) ||
    (needsRoot && missingTool("the image test runs podman as root").skip) ||
    (postgresAdminUrl === undefined && missingTool("DATABASE_URL is not set: the server image runs on PostgreSQL").skip)
)("the server and conformance images", () => {
  const folder = mkdtempSync(join(tmpdir(), "petstore-images-"))
  const secrets = join(folder, "secrets")
  const reports = join(folder, "reports")
  const adminToken = `image-test-admin-token-${process.pid}-${Date.now()}`
  const containers: Array<string> = []
  const volumes: Array<string> = []
  let database: TestDatabase
  // Trust authentication ignores it, but a deployment's URL has one: neither it nor the URL may show anywhere.
  const databasePassword = `image-test-db-password-${process.pid}`
  const databaseUrl = () => {
    const url = new URL(database.url)
    url.password = databasePassword
    return url.toString()
  }

  const writeSecret = (name: string, contents: string) => {
    const path = join(secrets, name)
    writeFileSync(path, `${contents}\n`)
    // The server runs as uid 1000 and reads it through the bind mount.
    chmodSync(path, 0o444)
  }

  beforeAll(async () => {
    for (const path of [secrets, reports]) mkdirSync(path, { recursive: true })
    chmodSync(reports, 0o777)
    const baseStarted = Date.now()
    await run(join(root, "deploy/images/build-base-image.sh"), [], 1_200_000)
    measured.push(`base image ready in ${Math.round((Date.now() - baseStarted) / 1000)} s`)
    const caBundle = "/etc/ssl/certs/ca-certificates.crt"
    const build = async (image: string, target: string) => {
      const started = Date.now()
      await ok([
        "build",
        ...limits,
        "--pull=never",
        "--layers",
        "-f",
        join(root, "deploy/images/Containerfile"),
        "--target",
        target,
        "--build-arg",
        `VERSION=${version}`,
        "-t",
        image,
        ...(existsSync(caBundle) ? ["--secret", `id=ca-certificates,src=${caBundle}`] : []),
        root
      ], 1_200_000)
      measured.push(`${target} image built in ${Math.round((Date.now() - started) / 1000)} s`)
    }
    await build(serverImage, "server")
    await build(conformanceImage, "conformance")
    database = await createTestDatabase(postgresAdminUrl!, "petstore_images")
  })

  afterAll(async () => {
    for (const container of containers) await podman(["rm", "--force", "--volumes", "--time", "0", container])
    for (const volume of volumes) await podman(["volume", "rm", "--force", volume])
    for (const image of [serverImage, conformanceImage]) await podman(["rmi", "--force", image])
    // The build stage's layers (about 740 MB a build) would pile up run after run on a machine that keeps its storage.
    await podman(["image", "prune", "--force", "--filter", "label=io.petstore.stage=build"])
    await database?.drop()
    rmSync(folder, { recursive: true, force: true })
    console.info(`images: ${measured.join("; ")}`)
  })

  it("labels both images with the release's version, source and licence, runs them as uid 1000, within the size budget", async () => {
    for (const [image, budgetMB] of [[serverImage, 400], [conformanceImage, 300]] as const) {
      const labels = JSON.parse(await inspect(image, "{{json .Config.Labels}}")) as Record<string, string>
      expect(labels).toMatchObject({
        "org.opencontainers.image.version": version,
        "org.opencontainers.image.licenses": "MIT"
      })
      expect(labels["org.opencontainers.image.source"]).toMatch(/^https:\/\//)
      expect(await inspect(image, "{{.Config.User}}")).toBe("1000:1000")
      const size = Number(await inspect(image, "{{.Size}}"))
      measured.push(`${image.split(":")[0]!.split("/")[1]} ${Math.round(size / 1e6)} MB`)
      expect(size / 1e6, image).toBeLessThan(budgetMB)
    }
  })

  describe("the server image on PostgreSQL, read-only, secrets from files", () => {
    const name = `petstore-image-test-${process.pid}`
    let port: number
    let adminPort: number
    let origin: string
    let admin: string
    const runServer = async () => {
      const started = Date.now()
      await ok(["start", name])
      await waitFor(async () => await status(`${origin}/readyz`) === 200, 180_000, "ready after a restart")
      return Date.now() - started
    }

    beforeAll(async () => {
      ;[port, adminPort] = [await freePort(), await freePort()]
      origin = `http://127.0.0.1:${port}`
      admin = `http://127.0.0.1:${adminPort}`
      writeSecret("admin-token", adminToken)
      writeSecret("database-url", databaseUrl())
      const started = Date.now()
      await ok([
        "run",
        "--detach",
        "--name",
        name,
        ...limits,
        "--read-only",
        "--tmpfs",
        "/tmp",
        "--network",
        "host",
        "--volume",
        `${secrets}:/run/secrets:ro`,
        "--env",
        "ADMIN_TOKEN_FILE=/run/secrets/admin-token",
        "--env",
        "DATABASE_URL_FILE=/run/secrets/database-url",
        "--env",
        `PORT=${port}`,
        "--env",
        `ADMIN_PORT=${adminPort}`,
        "--env",
        "HOST=127.0.0.1",
        "--env",
        "SHUTDOWN_DRAIN_SECONDS=5",
        "--env",
        "METRICS_PUBLIC=true",
        serverImage
      ])
      containers.push(name)
      await waitFor(async () => await status(`${origin}/readyz`) === 200, 180_000, "ready").catch(async (error) => {
        throw new Error(`${error}\n${(await podman(["logs", name])).stdout}`)
      })
      measured.push(`server (PostgreSQL) ready ${((Date.now() - started) / 1000).toFixed(1)} s after podman run`)
    })

    it("runs as uid 1000 on a read-only root", async () => {
      expect(await ok(["exec", name, "id", "-u"])).toBe("1000")
      const write = await podman(["exec", name, "sh", "-c", "echo x > /app/written"])
      expect(write.code).not.toBe(0)
      expect(write.stderr).toContain("Read-only file system")
    })

    it("applies migrations with the command docs/postgresql.md and the server's refusal print for the image", async () => {
      const printed = /^# in the server image \(working directory \/app\): +(.+)$/m.exec(
        blockContaining(join(root, "docs/postgresql.md"), "pnpm migrate").text
      )?.[1]
      expect(printed).toBe("node dist/main.js migrate")
      expect(MIGRATE_COMMAND).toContain(`in the server image: \`${printed}\``)
      // In the running container: its working directory, its user, its DATABASE_URL_FILE.
      const outcome = await podman(["exec", name, ...printed!.split(" ")])
      expect(outcome.stderr).toBe("")
      expect(outcome.code).toBe(0)
      expect(outcome.stdout).toBe("petstore: migrations applied: none pending\n")
    })

    it("passes every check of the conformance image, which writes its reports to the mounted folder", async () => {
      const lines: Array<string> = []
      for (const plan of ["free", "pro", "business"] as const) {
        for (let i = 0; i < 2; i++) lines.push(`${plan}=${(await createKey(admin, plan, undefined, adminToken)).key}`)
      }
      for (let i = 0; i < 2; i++) {
        lines.push(
          `enterprise=${(await createKey(admin, "enterprise", { perMinute: 120, perDay: 5_000 }, adminToken)).key}`
        )
      }
      lines.push(`staff=${(await createKey(admin, "business", undefined, adminToken, "staff")).key}`)
      writeSecret("conformance-keys", lines.join("\n"))
      const outcome = await podman([
        "run",
        "--rm",
        ...limits,
        "--read-only",
        "--tmpfs",
        "/tmp",
        "--network",
        "host",
        "--volume",
        `${secrets}/conformance-keys:/run/secrets/keys:ro`,
        "--volume",
        `${reports}:/reports`,
        conformanceImage,
        "--base-url",
        `${origin}/v1`,
        "--keys-file",
        "/run/secrets/keys",
        "--junit",
        "junit.xml",
        "--json",
        "report.json"
      ], 600_000)
      const last = outcome.stdout.trim().split("\n").at(-1)!
      expect(outcome.code, `${outcome.stdout.slice(-3000)}\n${outcome.stderr}`).toBe(0)
      expect(last).toMatch(/^\d+ passed, 0 failed, \d+ skipped$/)
      measured.push(`conformance: ${last}`)
      expect(readFileSync(join(reports, "junit.xml"), "utf8")).toContain("<testsuite")
      expect(JSON.parse(readFileSync(join(reports, "report.json"), "utf8"))).toHaveProperty("summary")
      // Bad usage is exit 2, as documented.
      expect((await podman(["run", "--rm", ...limits, conformanceImage, "--no-such-flag"])).code).toBe(2)
    })

    it("holds its memory under load within the Kubernetes limit (288 MiB)", async () => {
      const key = (await createKey(admin, "enterprise", { perMinute: 1_000_000, perDay: 10_000_000 }, adminToken)).key
      const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" }
      const until = Date.now() + 15_000
      let answered = 0
      let peak = 0
      const sampler = setInterval(() => {
        void fetch(`${admin}/metrics`).then((response) => response.text(), () => "").then((text) => {
          peak = Math.max(peak, Number(/^process_resident_memory_bytes (\d+)/m.exec(text)?.[1] ?? 0))
        })
      }, 500)
      // 32 clients, each one request at a time, for 15 s: bounded in count and time, on loopback.
      await Promise.all(Array.from({ length: 32 }, async (_, client) => {
        for (let i = 0; Date.now() < until && i < 5_000; i++) {
          const request = i % 4 === 0
            ? fetch(`${origin}/v1/pets`, {
              method: "POST",
              headers,
              body: JSON.stringify({ name: `load-${client}-${i}`, categoryId: 1 })
            })
            : fetch(`${origin}/v1/pets?limit=20`, { headers })
          if ((await request.then((response) => response.arrayBuffer().then(() => response.status), () => 0)) > 0) {
            answered++
          }
        }
      }))
      clearInterval(sampler)
      const cgroup = await podman(["stats", "--no-stream", "--format", "{{.MemUsage}}", name])
      measured.push(
        `memory under load: ${
          mib(peak)
        } MiB resident at peak (${answered} requests in 15 s), podman stats ${cgroup.stdout.trim()}`
      )
      expect(answered).toBeGreaterThan(0)
      expect(mib(peak)).toBeLessThan(288)
    })

    it("loses no acknowledged write to a SIGKILL", async () => {
      const key = (await createKey(admin, "enterprise", { perMinute: 1_000_000, perDay: 10_000_000 }, adminToken)).key
      const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" }
      const acknowledged: Array<number> = []
      let killed = false
      const writers = Array.from({ length: 8 }, async (_, writer) => {
        for (let i = 0; !killed && i < 2_000; i++) {
          const response = await fetch(`${origin}/v1/pets`, {
            method: "POST",
            headers,
            body: JSON.stringify({ name: `kill-${writer}-${i}`, categoryId: 1 }),
            signal: AbortSignal.timeout(10_000)
          }).catch(() => undefined)
          if (response?.status === 201) acknowledged.push(((await response.json()) as { id: number }).id)
          else if (response === undefined) return
        }
      })
      await waitFor(async () => acknowledged.length >= 50, 60_000, "50 pets created")
      await ok(["kill", "--signal", "KILL", name])
      killed = true
      await Promise.all(writers)
      expect(await inspect(name, "{{.State.ExitCode}}")).toBe("137")
      const restartMs = await runServer()
      measured.push(`server (PostgreSQL) ready ${(restartMs / 1000).toFixed(1)} s after podman start`)
      for (const id of acknowledged) {
        expect(await status(`${origin}/v1/pets/${id}`, { headers: { authorization: `Bearer ${key}` } }), `pet ${id}`)
          .toBe(200)
      }
    })

    it("drains on podman stop (readyz 503, the API still served), then exits 0 within the grace period", async () => {
      const key = (await createKey(admin, "free", undefined, adminToken)).key
      const started = Date.now()
      const stopping = ok(["stop", "--time", String(GRACE_SECONDS), name], (GRACE_SECONDS + 30) * 1000)
      await waitFor(async () => await status(`${origin}/readyz`) === 503, 10_000, "readyz 503 while draining")
      expect(await status(`${origin}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })).toBe(200)
      await stopping
      const seconds = (Date.now() - started) / 1000
      measured.push(`podman stop took ${seconds.toFixed(1)} s (drain 5 s)`)
      expect(await inspect(name, "{{.State.ExitCode}}")).toBe("0")
      expect(seconds).toBeLessThan(GRACE_SECONDS)
    })

    it("shows no secret in podman inspect or in its logs", async () => {
      const shown = (await ok(["inspect", name])) + (await podman(["logs", name])).stdout +
        (await podman(["logs", name])).stderr
      expect(shown).toContain("ADMIN_TOKEN_FILE=/run/secrets/admin-token")
      expect(shown).not.toContain(adminToken)
      expect(shown).not.toContain(databasePassword)
      expect(shown).not.toContain(databaseUrl())
    })
  })

  it("runs docs/deploying.md's podman example as printed: the server on PGlite, a key issued on the admin port, used", async () => {
    const example = blockContaining(join(root, "docs/deploying.md"), "podman run --detach --name petstore").text
    const [port, adminPort] = [await freePort(), await freePort()]
    const name = `petstore-readme-example-${process.pid}`
    const volume = `petstore-readme-example-data-${process.pid}`
    containers.push(name)
    volumes.push(volume)
    // Only what must differ on a shared machine: host ports, names, and the image this run built.
    const script = substituted(example, [
      ["-p 8080:8080", `-p ${port}:8080`],
      ["localhost:8080", `localhost:${port}`],
      ["-p 127.0.0.1:8081:8081", `-p 127.0.0.1:${adminPort}:8081`],
      ["localhost:8081", `localhost:${adminPort}`],
      ["--name petstore ", `--name ${name} `],
      ["-v petstore-data:/data", `-v ${volume}:/data`],
      ["petstore-server:1.0.0", serverImage]
    ])
    const here = mkdtempSync(join(folder, "readme-example-"))
    // What the global flags and ulimits above do, as podman's configuration: the example's commands stay as printed.
    const containersConf = join(folder, "containers.conf")
    writeFileSync(
      containersConf,
      [
        "[containers]",
        "default_ulimits = [\"nofile=20000:20000\", \"nproc=4096:4096\"]",
        "[engine]",
        "runtime = \"runc\"",
        "cgroup_manager = \"cgroupfs\"",
        ""
      ].join("\n")
    )
    const outcome = await new Promise<Outcome>((resolve) => {
      // The example waits for readiness with an unbounded loop, as a reader's shell would: the bound is here.
      execFile("bash", ["-e", "-c", script], {
        cwd: here,
        env: { ...process.env, CONTAINERS_CONF: containersConf },
        timeout: 240_000
      }, (error, stdout, stderr) => resolve({ code: error ? (error.code as number) ?? 1 : 0, stdout, stderr }))
    })
    expect(outcome.code, `${outcome.stderr}${outcome.stdout}\n${(await podman(["logs", name])).stderr}`).toBe(0)
    // `podman run --detach` prints the container's id; the last command's answer follows it: the store's pets, to
    // the key the example issued (a refused or empty key gets an error object).
    const [containerId, answer] = outcome.stdout.split("\n")
    expect(await inspect(name, "{{.Id}}")).toBe(containerId)
    expect(Array.isArray(JSON.parse(answer!)), outcome.stdout).toBe(true)
    const token = readFileSync(join(here, "admin-token"), "utf8").trim()
    const keys = await fetch(`http://127.0.0.1:${adminPort}/admin/keys`, {
      headers: { authorization: `Bearer ${token}` }
    })
    expect(keys.status).toBe(200)
    expect((await keys.json()) as Array<{ name?: string }>).toContainEqual(
      expect.objectContaining({ name: "my laptop" })
    )
    // The admin port is published on the host's loopback only; the public port on every address.
    expect((await ok(["port", name])).split("\n").sort()).toEqual([
      `8080/tcp -> 0.0.0.0:${port}`,
      `8081/tcp -> 127.0.0.1:${adminPort}`
    ])
  })

  it.skipIf(onPath("kubectl") === undefined && missingTool("kubectl is not on PATH: the kit's pod is not run").skip)(
    "runs the Kubernetes kit's pod as rendered: the init container migrates as the owner, the server serves as the row-only role",
    async () => {
      const objects = kustomize(onPath("kubectl")!, "deploy/kubernetes/base")
      const pod = objects.find((object) => object.kind === "Deployment")!.spec.template.spec
      const config = objects.find((object) => object.kind === "ConfigMap")!.data!
      const fresh = await createTestDatabase(postgresAdminUrl!, "petstore_images_kit")
      const role = `petstore_app_${process.pid}`
      const admin = postgres(fresh.url, { max: 1, onnotice: () => {} })
      try {
        const owner = decodeURIComponent(new URL(fresh.url).username)
        for (const statement of readmeRuntimeRoleStatements(role, new URL(fresh.url).pathname.slice(1), owner)) {
          await admin.unsafe(statement)
        }
        const runtimeUrl = new URL(fresh.url)
        runtimeUrl.username = role
        // What `kubectl create secret generic` would hold (deploy/README.md, "Kubernetes").
        const secretData: Record<string, Record<string, string>> = {
          "petstore-migrate": { "database-url": fresh.url },
          "petstore-secrets": { "admin-token": adminToken, "database-url": runtimeUrl.toString() }
        }
        const [port, adminPort] = [await freePort(), await freePort()]
        // The pod's network is the host's here: only its ports and addresses differ from what the kit renders.
        const hostNetwork: Record<string, string> = {
          PORT: String(port),
          ADMIN_PORT: String(adminPort),
          HOST: "127.0.0.1",
          ADMIN_HOST: "127.0.0.1"
        }
        const podmanArgs = (container: any) => {
          const volumes = container.volumeMounts.flatMap((mount: { name: string; mountPath: string }) => {
            const volume = pod.volumes.find((volume: { name: string }) => volume.name === mount.name)
            if (volume.emptyDir !== undefined) return ["--tmpfs", mount.mountPath]
            const secretFolder = join(folder, `kit-${volume.secret.secretName}`)
            mkdirSync(secretFolder, { recursive: true })
            for (const [key, value] of Object.entries(secretData[volume.secret.secretName]!)) {
              writeFileSync(join(secretFolder, key), value)
              chmodSync(join(secretFolder, key), 0o444)
            }
            return ["--volume", `${secretFolder}:${mount.mountPath}:ro`]
          })
          const env = {
            ...config,
            ...Object.fromEntries(container.env.map((e: any) => [e.name, e.value])),
            ...hostNetwork
          }
          return [
            ...limits,
            "--read-only",
            "--network",
            "host",
            "--user",
            `${pod.securityContext.runAsUser}:${pod.securityContext.runAsGroup}`,
            ...volumes,
            ...Object.entries(env).flatMap(([name, value]) => ["--env", `${name}=${value}`]),
            ...(container.command === undefined ? [] : ["--entrypoint", JSON.stringify(container.command)]),
            serverImage,
            ...(container.args ?? [])
          ]
        }
        const [migrate] = pod.initContainers
        const migrated = await podman(["run", "--rm", ...podmanArgs(migrate)])
        expect(migrated.code, migrated.stderr).toBe(0)
        expect(migrated.stdout).toMatch(/^petstore: migrations applied: 1_create_pets, /)
        const [tables] =
          await admin`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public' AND tableowner <> ${owner}`
        expect(tables!.n, "every table belongs to the owner").toBe(0)

        const name = `petstore-image-test-kit-${process.pid}`
        containers.push(name)
        const server = pod.containers.find((container: { name: string }) => container.name === "server")
        await ok(["run", "--detach", "--name", name, ...podmanArgs(server)])
        await waitFor(
          async () => await status(`http://127.0.0.1:${port}/readyz`) === 200,
          180_000,
          "kit's server ready"
        )
          .catch(async (error) => {
            throw new Error(`${error}\n${(await podman(["logs", name])).stderr}`)
          })
        const key = (await createKey(`http://127.0.0.1:${adminPort}`, "free", undefined, adminToken)).key
        const created = await fetch(`http://127.0.0.1:${port}/v1/pets`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ name: "Served by the row-only role", categoryId: 1 })
        })
        expect(created.status).toBe(201)
        const [sessions] = await admin`SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = ${role}`
        expect(sessions!.n, "the server connects as the runtime role").toBeGreaterThan(0)
        await ok(["rm", "--force", "--volumes", "--time", "0", name])
      } finally {
        await admin.end()
        await fresh.drop()
        const cluster = postgres(postgresAdminUrl!, { max: 1, onnotice: () => {} })
        await cluster.unsafe(`DROP ROLE IF EXISTS ${role}`).finally(() => cluster.end())
      }
    }
  )

  it("keeps PGlite's data on a volume across containers, published with -p as docs/deploying.md runs it", async () => {
    const volume = `petstore-image-test-data-${process.pid}`
    volumes.push(volume)
    const [port, adminPort] = [await freePort(), await freePort()]
    const origin = `http://127.0.0.1:${port}`
    const admin = `http://127.0.0.1:${adminPort}`
    const start = async (name: string) => {
      const started = Date.now()
      await ok([
        "run",
        "--detach",
        "--name",
        name,
        ...limits,
        "--read-only",
        "--tmpfs",
        "/tmp",
        "--volume",
        `${volume}:/data`,
        "--publish",
        `127.0.0.1:${port}:8080`,
        "--publish",
        `127.0.0.1:${adminPort}:8081`,
        "--volume",
        `${secrets}/admin-token:/run/secrets/admin-token:ro`,
        "--env",
        "ADMIN_TOKEN_FILE=/run/secrets/admin-token",
        "--env",
        "ADMIN_HOST=0.0.0.0",
        serverImage
      ])
      containers.push(name)
      await waitFor(async () => await status(`${origin}/readyz`) === 200, 180_000, "PGlite ready")
      return (Date.now() - started) / 1000
    }
    const first = await start(`petstore-image-test-pglite-a-${process.pid}`)
    measured.push(`server (PGlite, new volume) ready ${first.toFixed(1)} s after podman run`)
    const key = (await createKey(admin, "free", undefined, adminToken)).key
    const created = await fetch(`${origin}/v1/pets`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "Kept", categoryId: 1 })
    })
    expect(created.status).toBe(201)
    const { id } = (await created.json()) as { id: number }
    await ok(
      ["stop", "--time", String(GRACE_SECONDS), `petstore-image-test-pglite-a-${process.pid}`],
      (GRACE_SECONDS + 30) * 1000
    )
    expect(await inspect(`petstore-image-test-pglite-a-${process.pid}`, "{{.State.ExitCode}}")).toBe("0")
    await ok(["rm", "--volumes", `petstore-image-test-pglite-a-${process.pid}`])
    const second = await start(`petstore-image-test-pglite-b-${process.pid}`)
    measured.push(`server (PGlite, existing volume) ready ${second.toFixed(1)} s after podman run`)
    const fetched = await fetch(`${origin}/v1/pets/${id}`, { headers: { authorization: `Bearer ${key}` } })
    expect(fetched.status).toBe(200)
    expect(((await fetched.json()) as { name: string }).name).toBe("Kept")
  })
})

const run = (command: string, args: ReadonlyArray<string>, timeoutMs: number) =>
  new Promise<void>((resolve, reject) => {
    execFile(command, args, { timeout: timeoutMs, maxBuffer: 64 * 2 ** 20 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} failed: ${error.message}\n${stderr}${stdout}`))
      else {
        console.info(stdout.trim().split("\n").at(-1))
        resolve()
      }
    })
  })
