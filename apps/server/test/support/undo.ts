import { afterEach } from "vitest"

/**
 * What a test set up, undone after it: each step pushed here runs after each test, last first, whatever the
 * others did (a step that fails does not keep the next from running).
 */
export const undoAfterEach = (): Array<() => Promise<void>> => {
  const steps: Array<() => Promise<void>> = []
  afterEach(async () => {
    for (const step of steps.splice(0).reverse()) await step().catch(() => undefined)
  })
  return steps
}
