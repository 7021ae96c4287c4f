/**
 * Hooks for testing code that uses the count cache: crash its worker, or
 * make a worker that cannot start. Re-exported from `./testing`.
 *
 * @module
 */
import { checkSettings, CountCacheClient } from "../cache/client.ts";
import { loadLocalEngine } from "../cache/local_engine.ts";
import type { CountCache, CountCacheOptions } from "../cache/mod.ts";

/**
 * Testing only: stops the cache's worker abruptly, as a crash would. Calls
 * waiting on the worker reject with a {@linkcode CountError}; the next call
 * starts a new worker. Does nothing when no worker runs.
 *
 * @param cache A cache from {@linkcode createCountCache} or {@linkcode sharedCountCache}.
 * @returns A promise that settles once the worker has exited.
 * @throws {TypeError} If `cache` was not created by this module.
 *
 * @example Surviving a crash
 * ```ts
 * import { createCountCache } from "@incontext/incontext/cache";
 * import { terminateCountWorkerForTesting } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * await using cache = createCountCache();
 * await cache.getOrCount("key", () => Promise.resolve(1));
 * await terminateCountWorkerForTesting(cache);
 * strictEqual(await cache.getOrCount("key", () => Promise.resolve(2)), 2);
 * ```
 */
export function terminateCountWorkerForTesting(
  cache: CountCache,
): Promise<void> {
  return CountCacheClient.terminate(cache);
}

/**
 * Testing only: creates a cache whose worker loads `workerUrl`, to exercise
 * the fallback to an in-process cache when the worker cannot start.
 *
 * @param workerUrl The worker module to load.
 * @param options Bounds of the cache.
 * @returns The cache.
 * @throws {RangeError} If a bound is not a positive integer.
 *
 * @example A worker that cannot start
 * ```ts
 * import { createCountCacheForTesting } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * // A worker module that ends at once, before it ever listens.
 * await using cache = createCountCacheForTesting(new URL("data:text/javascript,"));
 * strictEqual(await cache.getOrCount("key", () => Promise.resolve(3)), 3);
 * strictEqual(cache.kind, "in-process");
 * ```
 */
export function createCountCacheForTesting(
  workerUrl: URL,
  options: CountCacheOptions = {},
): CountCache {
  return new CountCacheClient({
    settings: checkSettings(options),
    workerUrl,
    engine: loadLocalEngine,
  });
}
