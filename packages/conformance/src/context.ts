import type { ApiKey, Plan } from "./model.ts"

/** What every phase knows about the run. */
export interface RunContext {
  readonly baseUrl: string
  readonly runId: string
  readonly keys: Readonly<Record<Plan, ReadonlyArray<ApiKey>>>
  /** The key of the general checks: the first key of the plan with the most room (business, enterprise, pro, free). */
  readonly generalKey: ApiKey | undefined
  /** A key with the `staff` role, for the store checks only staff may run (deliver, delete, every order). */
  readonly staffKey?: ApiKey | undefined
  readonly daily: boolean
  readonly maxWaitSeconds: number
  readonly progress: (line: string) => void
  /** A fresh, recognisable pet name: `conformance-<runid>-<n>`. */
  readonly petName: () => string
  /** An origin the deployment allows for CORS (`--cors-origin`); without it the CORS checks are skipped. */
  readonly corsOrigin?: string | undefined
  /** Keeps a secret the run learns (a webhook signing secret) out of everything it reports, as keys are. */
  readonly hideSecret?: (secret: string) => void
}

export const GENERAL_PHASE = "general"

/** How to give a key of the plan, in the command line's terms (none of which puts a key on the command line). */
export const keyHint = (plan: Plan) =>
  `add ${plan}=KEY to the --keys-file, or set CONFORMANCE_KEY_${plan.toUpperCase()}`

/** How to give the staff key, in the same terms. */
export const STAFF_KEY_HINT = "add staff=KEY to the --keys-file, or set CONFORMANCE_KEY_STAFF " +
  "(a key with the staff role: pnpm keys create --role staff)"
