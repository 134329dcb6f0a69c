/** Waits in real time, a bounded while, for a condition the server reaches on its own. */
export const waitFor = async <A>(
  check: () => A | undefined | false,
  what: string,
  timeoutMillis = 60_000
): Promise<A> => {
  const deadline = Date.now() + timeoutMillis
  for (;;) {
    const value = check()
    if (value !== undefined && value !== false) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}
