/**
 * How long a test waits for something that must happen before it calls the
 * wait a hang. It is no claim about speed: a loaded machine that is merely
 * slow gets there long before, and a test that asserts how fast something
 * happens belongs in bench/. Without such a bound a real hang would stall
 * the run instead of failing the one test.
 */
export const HANG_MS = 120_000;

/**
 * Polls `condition` every few milliseconds until it holds; throws once
 * {@linkcode HANG_MS} has passed without it.
 */
export async function until(
  condition: () => boolean | Promise<boolean>,
  what = "the awaited condition",
): Promise<void> {
  const giveUp = performance.now() + HANG_MS;
  while (!await condition()) {
    if (performance.now() > giveUp) {
      throw new Error(`hung: ${what} did not happen in ${HANG_MS} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** `promise`, or a rejection once {@linkcode HANG_MS} has passed without it settling. */
export function unlessHung<T>(what: string, promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`hung: ${what} within ${HANG_MS} ms`)),
        HANG_MS,
      );
    }),
  ]).finally(() => clearTimeout(timer));
}
