/** A guard against calls that never settle. */

/** The guard fired: the call it watched did not settle in time. */
export class GuardFired extends Error {
  override readonly name = "GuardFired";
}

/**
 * Races `promise` against a timer of `ms`: resolves or rejects as `promise`
 * does, or rejects with {@linkcode GuardFired} when the timer wins. The timer
 * is cleared either way, so the guard leaves nothing behind.
 */
export async function settleWithin<T>(
  promise: Promise<T>,
  ms: number,
  what: string,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const guard = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new GuardFired(`${what} did not settle within ${ms} ms`)),
      ms,
    );
  });
  try {
    return await Promise.race([promise, guard]);
  } finally {
    clearTimeout(timer);
  }
}
