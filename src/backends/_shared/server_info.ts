/**
 * A server's limits (llama.cpp `/props`, TGI `/info`), read once per backend
 * instance and shared by every count, with a retry after a failure.
 *
 * @module
 */
import { startDeadline } from "../../_internal/deadline.ts";

/** The limits of one server, loaded on first use. */
export interface ServerInfo<T> {
  /**
   * The loaded value, loading it on the first call. Concurrent callers share
   * one load; a caller whose signal aborts stops waiting, and the load goes
   * on for the others. A failed load is forgotten, so the next call retries.
   */
  get(signal: AbortSignal): Promise<T>;
  /** The loaded value, or `undefined` before a load succeeded; starts nothing. */
  peek(): T | undefined;
  /** Forgets the value; a load in flight still answers its callers but is not kept. */
  clear(): void;
}

/**
 * Creates the holder of a server's limits. `load` runs under its own
 * deadline of `timeoutMs`, not under a caller's, so that one caller's abort
 * does not fail the others waiting on the same load.
 */
export function createServerInfo<T>(
  load: (signal: AbortSignal) => Promise<T>,
  timeoutMs: number,
): ServerInfo<T> {
  let loaded: { readonly value: T } | undefined;
  let pending: Promise<T> | undefined;
  let generation = 0;

  function start(): Promise<T> {
    const started = generation;
    const deadline = startDeadline(timeoutMs);
    const loading = load(deadline.signal).then((value) => {
      if (started === generation) loaded = { value };
      return value;
    }).finally(() => {
      deadline.clear();
      if (started === generation) pending = undefined;
    });
    // Callers that stopped waiting leave no unhandled rejection behind.
    loading.catch(() => {});
    return loading;
  }

  return {
    get(signal) {
      if (loaded !== undefined) return Promise.resolve(loaded.value);
      pending ??= start();
      return untilAborted(pending, signal);
    },
    peek() {
      return loaded?.value;
    },
    clear() {
      generation++;
      loaded = undefined;
      pending = undefined;
    },
  };
}

/** `promise`, or a rejection with the signal's reason once it aborts first. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() =>
      signal.removeEventListener("abort", onAbort)
    );
  });
}
