import { DEVIATIONS } from "./fixture/deviations.ts"
import { catchesEach, isAboutResources } from "./support/deviationRuns.ts"

// Headers, quotas and the README's extensions; deviations.test.ts has the rest.
catchesEach(DEVIATIONS.filter((deviation) => !isAboutResources(deviation)))
