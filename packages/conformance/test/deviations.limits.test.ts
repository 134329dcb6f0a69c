import { DEVIATIONS } from "./fixture/deviations.ts"
import { catchesEach, isAboutResources, isAboutTheStore, isAboutValues } from "./support/deviationRuns.ts"

// Headers, quotas and the README's extensions; deviations.test.ts, deviations.store.test.ts and deviations.values.test.ts have the rest.
catchesEach(DEVIATIONS.filter((deviation) => !isAboutResources(deviation) && !isAboutTheStore(deviation) && !isAboutValues(deviation)))
