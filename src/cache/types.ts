/**
 * The count cache's contract: its options, its counters, the interface
 * every cache implements, and its one optional capability, the core the
 * cache counts in (see `capability.ts` for how the package reads it).
 *
 * @module
 */
import type { EngineCall } from "./engine_slot.ts";
import type { CountTier } from "./tier.ts";

/**
 * The key of a count cache's optional core: see {@linkcode CountCacheCore}.
 *
 * @example The caches this package makes carry a core
 * ```ts
 * import { COUNT_CACHE_CORE, createCountCache } from "@incontext/incontext/cache";
 * import { strictEqual } from "node:assert/strict";
 *
 * await using cache = createCountCache({ inProcess: true });
 * strictEqual(typeof cache[COUNT_CACHE_CORE]?.runEngine, "function");
 * ```
 */
export const COUNT_CACHE_CORE: unique symbol = Symbol(
  "incontext.countCacheCore",
);

/**
 * The core a count cache counts in (its worker, or this thread), as the
 * package's own layers use it: the local backend counts there, so that its
 * tokenizer and templates load once per cache, off the caller's thread; an
 * HTTP backend reads a stored count there without a round trip; the proxy's
 * shared store sits behind it as a second tier.
 */
export interface CountCacheCore {
  /**
   * Runs one call of the engine the core holds (the local counting engine,
   * for the caches this package makes); `signal` rejects this caller only.
   *
   * @param call The operation and its data.
   * @param signal Rejects this caller only.
   * @returns The call's value.
   * @throws {CountError} If the core runs no engine, or its worker stops.
   */
  runEngine(call: EngineCall, signal?: AbortSignal): Promise<unknown>;
  /**
   * The count stored under `key()`, read at once when the core runs in this
   * thread (a hit in the stats); `undefined` on a miss, with a worker, or
   * once the cache is disposed, and then `key` is not called.
   *
   * @param key Makes the key; called at most once.
   * @returns The stored count, or `undefined`.
   */
  peek(key: () => string): number | undefined;
  /**
   * Puts `tier` behind the cache, or takes it away with `undefined`: the
   * caller that leads a missing key's count asks the tier first and writes
   * its count to it.
   *
   * @param tier The store of counts behind the cache's own.
   */
  attachTier(tier: CountTier | undefined): void;
}

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

/**
 * A bounded cache of counts, shared by its callers, with singleflight. Any
 * object with these members is a cache: a backend takes one of another make
 * as it takes one from {@linkcode createCountCache}, and only what the
 * optional {@linkcode COUNT_CACHE_CORE} member offers then runs on the
 * caller's thread instead of the cache's core.
 */
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
  /**
   * Optional: the core the cache counts in. {@linkcode createCountCache} and
   * {@linkcode sharedCountCache} set it; a cache that leaves it out still
   * serves every count, and the local backend then counts on the caller's
   * thread.
   */
  readonly [COUNT_CACHE_CORE]?: CountCacheCore;
}
