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

/** Which implementation serves a {@linkcode CountCache}. */
export type CountCacheKind = "worker_threads" | "in-process";

/** Options for {@linkcode createCountCache} and {@linkcode sharedCountCache}. */
export interface CountCacheOptions {
  /**
   * How many counts the cache keeps.
   *
   * @default {4096}
   */
  readonly maxEntries?: number;
  /**
   * The total UTF-8 bytes of the stored keys.
   *
   * @default {1_048_576}
   */
  readonly maxKeyBytes?: number;
  /**
   * Use the in-process implementation, with no worker.
   *
   * @default {false}
   */
  readonly inProcess?: boolean;
}

/** Counters of a {@linkcode CountCache}, read with {@linkcode CountCache.stats}. */
export interface CountCacheStats {
  /** Counts stored. */
  readonly entries: number;
  /** UTF-8 bytes of the stored keys. */
  readonly keyBytes: number;
  /** Lookups served from stored counts. */
  readonly hits: number;
  /** Lookups that computed a count or joined one being computed. */
  readonly misses: number;
  /** How many times the cache was cleared. */
  readonly epoch: number;
  /** Model folders the local backend's counts loaded in this cache's core (once per folder). */
  readonly modelLoads: number;
  /**
   * Lookups of piece counts (the text between a tokenizer's added tokens)
   * served from stored counts; pieces are stored in the same bounded LRU as
   * whole counts, under a hash of the tokenizer's SHA-256 and the piece.
   */
  readonly segmentHits: number;
  /** Lookups of piece counts that tokenized the piece. */
  readonly segmentMisses: number;
}

/** A bounded cache of counts, shared by its callers, with singleflight. */
export interface CountCache extends AsyncDisposable {
  /**
   * Which implementation currently serves calls. It changes to
   * `"in-process"` if the worker cannot start.
   */
  readonly kind: CountCacheKind;
  /**
   * Returns the cached count for `key`, or runs `compute` once for all
   * concurrent callers of the same key (singleflight). A failure reaches
   * every caller waiting on it and is never cached.
   *
   * @param key A short key, such as one from {@linkcode countCacheKey}.
   * @param compute Counts on a miss; it must resolve to a non-negative integer.
   * @param signal Rejects this caller only; the count goes on for the others.
   * @returns The count.
   * @throws {TypeError} If `key` is not a string or `compute` not a function.
   * @throws {RangeError} If `compute` resolves to anything but a non-negative integer.
   * @throws {CountError} If the cache is disposed, or its worker stops, before an answer.
   * @throws The error of `compute`, or `signal.reason` after an abort.
   */
  getOrCount(
    key: string,
    compute: () => Promise<number>,
    signal?: AbortSignal,
  ): Promise<number>;
  /**
   * Drops every count and bumps the epoch. A count in flight during the
   * clear still reaches its callers but is not stored.
   *
   * @returns A promise that settles once the clear has taken effect.
   * @throws {CountError} If the cache is disposed.
   */
  clear(): Promise<void>;
  /**
   * Reads the cache's counters.
   *
   * @returns The counters.
   * @throws {CountError} If the cache is disposed.
   */
  stats(): Promise<CountCacheStats>;
}

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
  return new CountCacheClient(
    settings,
    options.inProcess === true ? undefined : workerUrl(),
  );
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
    const cache: CountCache = new CountCacheClient(settings, url, () => {
      if (shared === cache) shared = undefined;
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
