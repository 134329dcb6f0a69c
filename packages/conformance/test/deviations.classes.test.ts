import { VALUE_CLASS_DEVIATIONS } from "./fixture/valueClassDeviations.ts"
import { catchesEach } from "./support/deviationRuns.ts"

// One generated deviation per value-class check: the fixture takes that class's values as valid, and only
// that check runs (as --grep selects it).
catchesEach(VALUE_CLASS_DEVIATIONS)
