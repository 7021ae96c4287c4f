/**
 * A time limit on one operation, tied to its caller's signal, whose timer is
 * cleared when the operation ends.
 *
 * @module
 */
import { clearQueuedTimeout, setQueuedTimeout } from "./timeouts.ts";

/** A time limit on one operation, tied to the caller's own abort signal. */
export interface Deadline {
  /** Aborts when the time is up or the caller's signal aborts. */
  readonly signal: AbortSignal;
  /** True once the time ran out (not when the caller aborted). */
  readonly expired: boolean;
  /** Stops the timer and lets go of the caller's signal; call it when done. */
  clear(): void;
}

/**
 * Starts a deadline of `ms` milliseconds. Unlike `AbortSignal.timeout`, its
 * timer is cleared as soon as the operation ends, so a count that finished in
 * a millisecond does not hold a timer (and its closure) for 30 seconds.
 */
export function startDeadline(ms: number, parent?: AbortSignal): Deadline {
  const controller = new AbortController();
  let expired = false;
  const onAbort = (): void => controller.abort(parent?.reason);
  if (parent?.aborted) onAbort();
  else parent?.addEventListener("abort", onAbort, { once: true });
  const timer = setQueuedTimeout(() => {
    expired = true;
    controller.abort(
      new DOMException("The operation timed out", "TimeoutError"),
    );
  }, ms);
  return {
    signal: controller.signal,
    get expired() {
      return expired;
    },
    clear() {
      clearQueuedTimeout(timer);
      parent?.removeEventListener("abort", onAbort);
    },
  };
}
