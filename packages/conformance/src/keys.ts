import { type Plan, PLANS } from "./model.ts"

export type KeysByPlan = Partial<Record<Plan, Array<string>>>

const isPlan = (value: string): value is Plan => (PLANS as ReadonlyArray<string>).includes(value)

/**
 * `free=psk_…` as a plan and a key; or, when it is not one, what is wrong with
 * it in words that never repeat the key (the text may be a key pasted alone).
 */
export const parseAssignment = (text: string): { readonly plan: Plan; readonly key: string } | { readonly problem: string } => {
  const separator = text.indexOf("=")
  if (separator < 0) return { problem: "is not PLAN=KEY" }
  const plan = text.slice(0, separator).trim().toLowerCase()
  const key = text.slice(separator + 1).trim()
  if (!isPlan(plan)) {
    // A plan name is a short word; anything else before the = may be part of a secret.
    return { problem: /^[a-z_-]{1,20}$/.test(plan) ? `names the plan "${plan}", which does not exist` : "does not start with a plan" }
  }
  if (key === "") return { problem: `has no key after "${plan}="` }
  return { plan, key }
}

/** A keys file: one `PLAN=KEY` a line; blank lines and lines starting with `#` are ignored. */
export const parseKeysFile = (contents: string): { readonly keys: KeysByPlan } | { readonly line: number; readonly problem: string } => {
  const keys: KeysByPlan = {}
  for (const [index, raw] of contents.split(/\r?\n/).entries()) {
    const line = raw.trim()
    if (line === "" || line.startsWith("#")) continue
    const parsed = parseAssignment(line)
    if ("problem" in parsed) return { line: index + 1, problem: parsed.problem }
    ;(keys[parsed.plan] ??= []).push(parsed.key)
  }
  return { keys }
}

/** The keys of both, plan by plan, `first`'s first. */
export const concatPlans = (first: KeysByPlan, second: KeysByPlan): KeysByPlan => {
  const keys: KeysByPlan = {}
  for (const plan of PLANS) {
    const both = [...(first[plan] ?? []), ...(second[plan] ?? [])]
    if (both.length > 0) keys[plan] = both
  }
  return keys
}

export const countKeys = (keys: KeysByPlan) => PLANS.reduce((total, plan) => total + (keys[plan]?.length ?? 0), 0)

/**
 * The command-line arguments that might be secrets, for scrubbing from the
 * messages of a command line that could not be parsed (which quote the
 * offending values): every value, not flag names, of eight characters or more.
 */
export const argumentValues = (args: ReadonlyArray<string>) =>
  args
    .flatMap((arg) => arg.startsWith("-") ? (arg.includes("=") ? [arg.slice(arg.indexOf("=") + 1)] : []) : [arg])
    .flatMap((value) => [value, ...(value.includes("=") ? [value.slice(value.indexOf("=") + 1)] : [])])
    .filter((value) => value.length >= 8)
