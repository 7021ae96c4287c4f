/**
 * The count cache's contract: its options, its counters and the interface
 * every cache implements.
 *
 * @module
 */

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
