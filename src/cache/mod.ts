/**
 * A process-wide cache of exact token counts. Its LRU lives in a
 * `node:worker_threads` worker reached through a MessagePort, so that every
 * part of a process shares one bounded cache, and concurrent misses of one
 * key run a single count (singleflight). The local backend counts inside
 * that worker too: its tokenizer and templates load there, once per model
 * folder, off the caller's event loop. Where no worker can start, the same
 * cache runs in process.
 *
 * @example Caching a count
 * ```ts
 * import { countCacheKey, createCountCache } from "@incontext/incontext/cache";
 * import { strictEqual } from "node:assert/strict";
 *
 * await using cache = createCountCache();
 * const key = await countCacheKey("vllm-tokenize", 8192, '{"messages":[]}');
 * strictEqual(await cache.getOrCount(key, () => Promise.resolve(7)), 7);
 * strictEqual(await cache.getOrCount(key, () => Promise.resolve(8)), 7);
 * ```
 *
 * @module
 */

import { hashCountKey } from "./key.ts";
import { checkSettings, CountCacheClient, workerUrl } from "./client.ts";
import { loadLocalEngine } from "./engine_loader.ts";
import type { CountCache, CountCacheOptions } from "./types.ts";

export type {
  CountCache,
  CountCacheCore,
  CountCacheKind,
  CountCacheOptions,
  CountCacheStats,
} from "./types.ts";
export { COUNT_CACHE_CORE } from "./types.ts";
export type { EngineCall } from "./engine_slot.ts";
export type { CountTier } from "./tier.ts";

/**
 * Creates a count cache with its own worker. The worker starts on the first
 * call; while no call waits for it, it does not keep the process alive.
 *
 * @param options Bounds of the cache, and whether to skip the worker.
 * @returns The cache; dispose it to stop its worker.
 * @throws {RangeError} If a bound is not a positive integer.
 *
 * @example Singleflight
 * ```ts
 * import { createCountCache } from "@incontext/incontext/cache";
 * import { deepStrictEqual, strictEqual } from "node:assert/strict";
 *
 * await using cache = createCountCache({ maxEntries: 100 });
 * let computed = 0;
 * const compute = () => Promise.resolve(++computed * 10);
 * const counts = await Promise.all([1, 2, 3].map(() => cache.getOrCount("key", compute)));
 * deepStrictEqual(counts, [10, 10, 10]);
 * strictEqual(computed, 1);
 * strictEqual((await cache.stats()).entries, 1);
 * ```
 */
export function createCountCache(options: CountCacheOptions = {}): CountCache {
  const settings = checkSettings(options);
  return new CountCacheClient({
    settings,
    workerUrl: options.inProcess === true ? undefined : workerUrl(),
    engine: loadLocalEngine,
  });
}

let shared: CountCache | undefined;

/**
 * Returns the process-wide count cache, creating it on the first call.
 * Options apply only to that creation. Once the shared cache is disposed,
 * the next call creates a new one.
 *
 * @param options Bounds of the cache, used if this call creates it.
 * @returns The shared cache.
 * @throws {RangeError} If a bound is not a positive integer.
 *
 * @example One cache per process
 * ```ts
 * import { sharedCountCache } from "@incontext/incontext/cache";
 * import { notStrictEqual, strictEqual } from "node:assert/strict";
 *
 * const cache = sharedCountCache();
 * strictEqual(sharedCountCache(), cache);
 * await cache[Symbol.asyncDispose]();
 * notStrictEqual(sharedCountCache(), cache);
 * await sharedCountCache()[Symbol.asyncDispose]();
 * ```
 */
export function sharedCountCache(options: CountCacheOptions = {}): CountCache {
  const settings = checkSettings(options);
  if (shared === undefined) {
    const url = options.inProcess === true ? undefined : workerUrl();
    const cache: CountCache = new CountCacheClient({
      settings,
      workerUrl: url,
      engine: loadLocalEngine,
      onDispose: () => {
        if (shared === cache) shared = undefined;
      },
    });
    shared = cache;
  }
  return shared;
}

/**
 * Hashes what determines a count into a short cache key: the hex SHA-256 of
 * the backend's source, the context length and the request's compact JSON,
 * exactly as given (it is never parsed or re-serialised). The hash runs on
 * the calling thread, so only the 64-character key reaches the worker.
 *
 * @param source The backend's {@linkcode Backend.source}.
 * @param contextLength The served context length, in tokens.
 * @param payload The request body as compact JSON.
 * @returns 64 lowercase hex characters.
 * @throws {TypeError} If `source` or `payload` is not a string.
 * @throws {RangeError} If `contextLength` is not a positive integer.
 *
 * @example Keys differ by every input
 * ```ts
 * import { countCacheKey } from "@incontext/incontext/cache";
 * import { match, notStrictEqual } from "node:assert/strict";
 *
 * const key = await countCacheKey("vllm-tokenize", 8192, '{"messages":[]}');
 * match(key, /^[0-9a-f]{64}$/);
 * notStrictEqual(key, await countCacheKey("vllm-tokenize", 4096, '{"messages":[]}'));
 * ```
 */
export function countCacheKey(
  source: string,
  contextLength: number,
  payload: string,
): Promise<string> {
  try {
    return Promise.resolve(hashCountKey(source, contextLength, payload));
  } catch (error) {
    return Promise.reject(error);
  }
}
