import { DEVIATIONS } from "./fixture/deviations.ts"
import { catchesEach, isAboutResources, isAboutTheStore } from "./support/deviationRuns.ts"

// Headers, quotas and the README's extensions; deviations.test.ts and deviations.store.test.ts have the rest.
catchesEach(DEVIATIONS.filter((deviation) => !isAboutResources(deviation) && !isAboutTheStore(deviation)))
