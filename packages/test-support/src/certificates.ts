import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { guardResource } from "./orphanGuard.ts"

/** A temporary folder of certificates made by `openssl` (P-256 keys: quick to make), valid for two days: CAs and what they sign. */
export interface TestCertificates {
  readonly dir: string
  /** The path of a file in the folder: `<name>.pem` (certificate), `<name>.key` (its key). */
  readonly file: (name: string) => string
  /** A self-signed CA: `<name>.pem`, `<name>.key`. */
  readonly makeCa: (name: string) => void
  /** A certificate signed by `ca`, for `subject` (`/CN=…`), with subjectAltName `san` (`DNS:…,IP:…`) or none. */
  readonly makeCert: (name: string, ca: string, subject: string, san?: string) => void
  readonly remove: () => void
}

/** `openssl req`'s arguments for a new unencrypted P-256 key (RSA took 23 s to make on a loaded machine). */
const NEW_P256_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

export const makeTestCertificates = (): TestCertificates => {
  const dir = mkdtempSync(join(tmpdir(), "petstore-certs-"))
  const forget = guardResource({ kind: "directory", path: dir })
  const file = (name: string) => join(dir, name)
  const openssl = (...args: Array<string>) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" })
  return {
    dir,
    file,
    makeCa: (name) =>
      openssl(
        "req",
        "-x509",
        ...NEW_P256_KEY,
        "-keyout",
        `${name}.key`,
        "-out",
        `${name}.pem`,
        "-days",
        "2",
        "-subj",
        `/CN=${name}`
      ),
    makeCert: (name, ca, subject, san) => {
      openssl(
        "req",
        ...NEW_P256_KEY,
        "-keyout",
        `${name}.key`,
        "-out",
        `${name}.csr`,
        "-subj",
        subject
      )
      writeFileSync(file(`${name}.ext`), san === undefined ? "basicConstraints=CA:FALSE\n" : `subjectAltName=${san}\n`)
      openssl(
        "x509",
        "-req",
        "-in",
        `${name}.csr`,
        "-CA",
        `${ca}.pem`,
        "-CAkey",
        `${ca}.key`,
        "-CAcreateserial",
        "-out",
        `${name}.pem`,
        "-days",
        "2",
        "-extfile",
        `${name}.ext`
      )
    },
    remove: () => {
      rmSync(dir, { recursive: true, force: true })
      forget()
    }
  }
}
