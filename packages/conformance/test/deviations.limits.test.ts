import { DEVIATIONS } from "./fixture/deviations.ts"
import {
  catchesEach,
  isAboutEvents,
  isAboutResources,
  isAboutTheStore,
  isAboutValues
} from "./support/deviationRuns.ts"

// Headers, quotas and the README's extensions; the other deviations.*.test.ts files have the rest.
catchesEach(
  DEVIATIONS.filter((deviation) =>
    !isAboutResources(deviation) && !isAboutTheStore(deviation) && !isAboutValues(deviation) &&
    !isAboutEvents(deviation)
  )
)
