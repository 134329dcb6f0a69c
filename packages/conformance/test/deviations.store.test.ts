import { DEVIATIONS } from "./fixture/deviations.ts"
import { catchesEach, isAboutTheStore } from "./support/deviationRuns.ts"

// The store area (beta): each deviation caught by a store check, with the fixture's staff key given.
catchesEach(DEVIATIONS.filter(isAboutTheStore))
