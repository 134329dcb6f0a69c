import { DEVIATIONS } from "./fixture/deviations.ts"
import { catchesEach, isAboutEvents } from "./support/deviationRuns.ts"

// The events list (an extension, checked when the document has /events): only the events checks run.
catchesEach(DEVIATIONS.filter(isAboutEvents))
