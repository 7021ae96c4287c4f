/**
 * A process-wide cache of exact token counts. Its LRU lives in a
 * `node:worker_threads` worker reached through a MessagePort, so that every
 * part of a process shares one bounded cache, and concurrent misses of one
 * key run a single count (singleflight). Where no worker can start, the same
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

import { getLogger } from "@logtape/logtape";
import { createHash } from "node:crypto";
import {
  type CacheRequest,
  type CacheResponse,
  type CoreSettings,
  fromErrorData,
  type Link,
  openLocalLink,
  toErrorData,
  WorkerLink,
} from "./_cache_protocol.ts";
import { CountError } from "./errors.ts";

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

const DEFAULT_SETTINGS: CoreSettings = {
  maxEntries: 4096,
  maxKeyBytes: 1_048_576,
};

/** A request waiting for the core's answer; replayed if the core moves. */
interface Awaiting {
  readonly request: CacheRequest;
  answer(response: CacheResponse, link: Link): void;
  lost(error: Error): void;
}

function checkSettings(options: CountCacheOptions): CoreSettings {
  const settings = { ...DEFAULT_SETTINGS };
  for (const name of ["maxEntries", "maxKeyBytes"] as const) {
    const value = options[name];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new RangeError(
        `Cannot create the count cache as '${name}' must be a positive integer: current value is ${value}`,
      );
    }
    settings[name] = value;
  }
  return settings;
}

function checkCount(count: unknown): number {
  if (typeof count !== "number" || !Number.isSafeInteger(count) || count < 0) {
    const shown = typeof count === "number" ? count : typeof count;
    throw new RangeError(
      `Cannot cache the count as it must be a non-negative integer: current value is ${shown}`,
    );
  }
  return count;
}

function disposedError(): CountError {
  return new CountError("Cannot count as the count cache is disposed");
}

/** The client side: ids, aborts, leading computations and the link to the core. */
class CountCacheClient implements CountCache {
  readonly #settings: CoreSettings;
  readonly #onDispose: (() => void) | undefined;
  #workerUrl: URL | undefined;
  #kind: CountCacheKind;
  #link: Link | undefined;
  #nextId = 0;
  #disposing: Promise<void> | undefined;
  readonly #awaiting = new Map<number, Awaiting>();
  /** Callers whose own compute runs; released on dispose. */
  readonly #leading = new Set<(error: Error) => void>();
  readonly #closing = new Set<Promise<void>>();

  constructor(
    settings: CoreSettings,
    workerUrl: URL | undefined,
    onDispose?: () => void,
  ) {
    this.#settings = settings;
    this.#workerUrl = workerUrl;
    this.#kind = workerUrl === undefined ? "in-process" : "worker_threads";
    this.#onDispose = onDispose;
  }

  get kind(): CountCacheKind {
    return this.#kind;
  }

  getOrCount(
    key: string,
    compute: () => Promise<number>,
    signal?: AbortSignal,
  ): Promise<number> {
    if (typeof key !== "string") {
      return Promise.reject(
        new TypeError(
          `Cannot count as 'key' must be a string: current type is ${typeof key}`,
        ),
      );
    }
    if (typeof compute !== "function") {
      return Promise.reject(
        new TypeError(
          `Cannot count as 'compute' must be a function: current type is ${typeof compute}`,
        ),
      );
    }
    if (this.#disposing !== undefined) return Promise.reject(disposedError());
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const id = this.#nextId++;
      const onAbort = (): void => {
        if (this.#awaiting.delete(id)) {
          this.#link?.post({ type: "cancel", id });
          this.#hold();
        }
        reject(signal?.reason);
      };
      const release = (): void => signal?.removeEventListener("abort", onAbort);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#ask({
        request: { type: "get", id, key },
        answer: (response, link) => {
          if (response.type === "lead") {
            this.#lead(id, link, compute, signal, resolve, reject).finally(
              release,
            );
            return;
          }
          release();
          if (response.type === "value") resolve(response.count);
          else if (response.type === "error") {
            reject(fromErrorData(response.error));
          }
        },
        lost: (error) => {
          release();
          reject(error);
        },
      });
    });
  }

  clear(): Promise<void> {
    return this.#control("clear", () => undefined);
  }

  stats(): Promise<CountCacheStats> {
    return this.#control("stats", (response) => {
      if (response.type !== "stats") {
        throw new CountError("The count worker answered out of protocol");
      }
      return response.stats;
    });
  }

  [Symbol.asyncDispose](): Promise<void> {
    this.#disposing ??= this.#dispose();
    return this.#disposing;
  }

  /** Testing hook: stops the worker abruptly, as a crash would. */
  static async terminate(cache: CountCache): Promise<void> {
    if (!(cache instanceof CountCacheClient)) {
      throw new TypeError(
        "Cannot terminate a cache this module did not create",
      );
    }
    if (cache.#link instanceof WorkerLink) await cache.#link.terminate();
  }

  async #lead(
    id: number,
    link: Link,
    compute: () => Promise<number>,
    signal: AbortSignal | undefined,
    resolve: (count: number) => void,
    reject: (error: unknown) => void,
  ): Promise<void> {
    this.#leading.add(reject);
    let message: CacheRequest;
    try {
      const count = checkCount(await compute());
      message = { type: "fill", id, count };
      resolve(count);
    } catch (error) {
      // A leader that gave up hands the count over instead of failing its waiters.
      message = signal?.aborted
        ? { type: "cancel", id }
        : { type: "fail", id, error: toErrorData(error) };
      reject(error);
    } finally {
      this.#leading.delete(reject);
    }
    // After a crash or a dispose the flight is gone with its core.
    if (this.#link === link) link.post(message);
  }

  #control<T>(
    type: "clear" | "stats",
    read: (response: CacheResponse) => T,
  ): Promise<T> {
    if (this.#disposing !== undefined) return Promise.reject(disposedError());
    return new Promise((resolve, reject) => {
      const id = this.#nextId++;
      this.#ask({
        request: { type, id },
        answer: (response) => {
          try {
            resolve(read(response));
          } catch (error) {
            reject(error);
          }
        },
        lost: reject,
      });
    });
  }

  #ask(awaiting: Awaiting): void {
    this.#awaiting.set(awaiting.request.id, awaiting);
    this.#link ??= this.#open();
    this.#link.post(awaiting.request);
    this.#hold();
  }

  #hold(): void {
    this.#link?.hold(this.#awaiting.size > 0);
  }

  #open(): Link {
    const events = {
      response: (response: CacheResponse): void => {
        if (this.#link !== link || response.type === "ready") return;
        const awaiting = this.#awaiting.get(response.id);
        if (awaiting === undefined) return;
        this.#awaiting.delete(response.id);
        this.#hold();
        awaiting.answer(response, link);
      },
      down: (error: unknown, started: boolean): void => {
        if (this.#link === link) this.#down(link, error, started);
      },
    };
    const link: Link = this.#workerUrl === undefined
      ? openLocalLink(this.#settings, events)
      : new WorkerLink(this.#workerUrl, this.#settings, events);
    return link;
  }

  #down(link: Link, error: unknown, started: boolean): void {
    this.#retire(link);
    this.#link = undefined;
    if (started) {
      // The counts died with the worker; the next call starts a new one.
      const lost = [...this.#awaiting.values()];
      this.#awaiting.clear();
      for (const awaiting of lost) {
        awaiting.lost(
          new CountError("The count worker stopped before it answered", {
            cause: error,
          }),
        );
      }
      return;
    }
    const errorType = error instanceof Error ? error.name : typeof error;
    getLogger(["incontext", "cache"]).warn(
      "The count worker could not start ({errorType}); the count cache runs in process",
      { errorType },
    );
    this.#workerUrl = undefined;
    this.#kind = "in-process";
    // No worker ever answered, so every request still waiting can move over.
    const link2 = this.#link = this.#open();
    for (const awaiting of this.#awaiting.values()) {
      link2.post(awaiting.request);
    }
  }

  #retire(link: Link): void {
    const closing = link.close().finally(() => this.#closing.delete(closing));
    this.#closing.add(closing);
  }

  async #dispose(): Promise<void> {
    this.#onDispose?.();
    if (this.#link !== undefined) this.#retire(this.#link);
    this.#link = undefined;
    const lost = [...this.#awaiting.values()];
    this.#awaiting.clear();
    for (const awaiting of lost) awaiting.lost(disposedError());
    for (const reject of this.#leading) reject(disposedError());
    this.#leading.clear();
    await Promise.all(this.#closing);
  }
}

function workerUrl(): URL {
  // JSR's npm layer ships .js files and never rewrites this URL.
  const file = import.meta.url.endsWith(".js")
    ? "./count_worker.js"
    : "./count_worker.ts";
  const url = new URL(file, import.meta.url);
  if (url.protocol === "file:") return url;
  // Deno's node:worker_threads loads only file: and data: URLs, but a module
  // imported from JSR is https:, so a data: module imports it instead.
  return new URL(
    `data:text/javascript,${
      encodeURIComponent(`import ${JSON.stringify(url.href)};`)
    }`,
  );
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
    return Promise.resolve(hashKey(source, contextLength, payload));
  } catch (error) {
    return Promise.reject(error);
  }
}

function hashKey(
  source: string,
  contextLength: number,
  payload: string,
): string {
  if (typeof source !== "string" || typeof payload !== "string") {
    throw new TypeError(
      "Cannot compute the count cache key as 'source' and 'payload' must be strings",
    );
  }
  if (!Number.isSafeInteger(contextLength) || contextLength < 1) {
    throw new RangeError(
      `Cannot compute the count cache key as 'contextLength' must be a positive integer: current value is ${contextLength}`,
    );
  }
  // The JSON array frames source and length unambiguously; the payload follows the newline.
  const text = `${JSON.stringify([source, contextLength])}\n${payload}`;
  // node:crypto (in Deno and Node alike) hashes a string synchronously, about
  // 5x faster than crypto.subtle at 40 KB (25 us vs 130 us, both measured here).
  return createHash("sha256").update(text).digest("hex");
}

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
 * import { createCountCache, terminateCountWorkerForTesting } from "@incontext/incontext/cache";
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
 * import { createCountCacheForTesting } from "@incontext/incontext/cache";
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
  return new CountCacheClient(checkSettings(options), workerUrl);
}
