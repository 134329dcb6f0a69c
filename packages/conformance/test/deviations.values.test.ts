import { DEVIATIONS } from "./fixture/deviations.ts"
import { catchesEach, isAboutValues } from "./support/deviationRuns.ts"

// The value classes (issue 23): each deviation accepts one class of invalid value, and only that class's checks run.
catchesEach(DEVIATIONS.filter(isAboutValues))
