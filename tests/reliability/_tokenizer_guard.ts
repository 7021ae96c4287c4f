/** A guard against calls that never settle, and the percentiles the suite reports. */

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

/** The `p`-th percentile (0-100) of `values`, nearest rank; NaN for none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1]!;
}
