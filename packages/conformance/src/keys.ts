import { type Plan, PLANS } from "./model.ts"

/** A plan's keys, or (`staff`) the key with the staff role that the store checks need. */
export type KeyKind = Plan | "staff"

export type KeysByPlan = Partial<Record<KeyKind, Array<string>>>

const KEY_KINDS: ReadonlyArray<string> = [...PLANS, "staff"]

const isKeyKind = (value: string): value is KeyKind => KEY_KINDS.includes(value)

/**
 * `free=psk_…` as a plan and a key; or, when it is not one, what is wrong with
 * it in words that never repeat the key (the text may be a key pasted alone).
 */
export const parseAssignment = (
  text: string
): { readonly plan: KeyKind; readonly key: string } | { readonly problem: string } => {
  const separator = text.indexOf("=")
  if (separator < 0) return { problem: "is not PLAN=KEY" }
  const plan = text.slice(0, separator).trim().toLowerCase()
  const key = text.slice(separator + 1).trim()
  if (!isKeyKind(plan)) {
    // A plan name is a short word; anything else before the = may be part of a secret.
    return {
      problem: /^[a-z_-]{1,20}$/.test(plan)
        ? `names the plan "${plan}", which does not exist`
        : "does not start with a plan"
    }
  }
  if (key === "") return { problem: `has no key after "${plan}="` }
  return { plan, key }
}

/** A keys file: one `PLAN=KEY` a line; blank lines and lines starting with `#` are ignored. */
export const parseKeysFile = (
  contents: string
): { readonly keys: KeysByPlan } | { readonly line: number; readonly problem: string } => {
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

/** The keys of both, plan by plan (and the staff keys), `first`'s first. */
export const concatPlans = (first: KeysByPlan, second: KeysByPlan): KeysByPlan => {
  const keys: KeysByPlan = {}
  for (const plan of [...PLANS, "staff"] as const) {
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
