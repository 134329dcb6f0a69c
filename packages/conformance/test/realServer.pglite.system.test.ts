import { describe } from "vitest"
import { conformsOn } from "./support/realServerSuite.ts"

describe("the real server on PGlite conforms", () => conformsOn("pglite"))
