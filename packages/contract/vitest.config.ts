import { defineConfig } from "vitest/config"
import { lanes } from "../../vitest.lanes.ts"

export default defineConfig({ test: { projects: lanes } })
