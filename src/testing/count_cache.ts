/**
 * Count caches for testing code that uses the count cache: one whose worker
 * a test can crash, or whose worker cannot start. Re-exported from
 * `./testing`.
 *
 * @module
 */
import { checkSettings, CountCacheClient, workerUrl } from "../cache/client.ts";
import { WorkerLink } from "../cache/links.ts";
import { loadLocalEngine } from "../cache/engine_loader.ts";
import type { CountCache, CountCacheOptions } from "../cache/mod.ts";

/** Options for {@linkcode createCountCacheForTesting}. */
export interface CountCacheForTestingOptions extends CountCacheOptions {
  /**
   * The worker module to load, such as one that cannot start.
   *
   * @default {the count worker the package ships}
   */
  readonly workerUrl?: URL;
}

/** How to crash each testing cache's current worker. */
const crashes = new WeakMap<CountCache, () => Promise<void>>();

/**
 * Testing only: creates a count cache that works as one from
 * `createCountCache()` does (the same worker, core and engine), and whose
 * worker {@linkcode terminateCountWorkerForTesting} can crash.
 *
 * @param options Bounds of the cache, the worker module, or no worker at all.
 * @returns The cache; dispose it to stop its worker.
 * @throws {RangeError} If a bound is not a positive integer.
 *
 * @example A worker that cannot start
 * ```ts
 * import { createCountCacheForTesting } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * // A worker module that ends at once, before it ever listens.
 * await using cache = createCountCacheForTesting({ workerUrl: new URL("data:text/javascript,") });
 * strictEqual(await cache.getOrCount("key", () => Promise.resolve(3)), 3);
 * strictEqual(cache.kind, "in-process");
 * ```
 */
export function createCountCacheForTesting(
  options: CountCacheForTestingOptions = {},
): CountCache {
  let current: WorkerLink | undefined;
  const cache = new CountCacheClient({
    settings: checkSettings(options),
    workerUrl: options.inProcess === true
      ? undefined
      : options.workerUrl ?? workerUrl(),
    engine: loadLocalEngine,
    openWorker: (url, settings, events) =>
      current = new WorkerLink(url, settings, events),
  });
  crashes.set(cache, async () => await current?.terminate());
  return cache;
}

/**
 * Testing only: stops the cache's worker abruptly, as a crash would. Calls
 * waiting on the worker reject with a `CountError`; the next call starts a
 * new worker. Does nothing when no worker runs.
 *
 * @param cache A cache from {@linkcode createCountCacheForTesting}.
 * @returns A promise that settles once the worker has exited.
 * @throws {TypeError} If `cache` was not created by {@linkcode createCountCacheForTesting}.
 *
 * @example Surviving a crash
 * ```ts
 * import {
 *   createCountCacheForTesting,
 *   terminateCountWorkerForTesting,
 * } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * await using cache = createCountCacheForTesting();
 * await cache.getOrCount("key", () => Promise.resolve(1));
 * await terminateCountWorkerForTesting(cache);
 * strictEqual(await cache.getOrCount("key", () => Promise.resolve(2)), 2);
 * ```
 */
export function terminateCountWorkerForTesting(
  cache: CountCache,
): Promise<void> {
  const crash = crashes.get(cache);
  if (crash === undefined) {
    return Promise.reject(
      new TypeError(
        "Cannot terminate the count worker as the cache was not created by createCountCacheForTesting()",
      ),
    );
  }
  return crash();
}
