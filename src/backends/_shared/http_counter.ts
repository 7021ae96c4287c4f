/**
 * What every backend that counts over HTTP shares: the common options read
 * and checked once (URL, timeout, `User-Agent`, API key, fetch, count
 * cache), and the steps of one count over them. Each backend holds one
 * {@linkcode HttpCounter} rather than extending a base class, so that its
 * entry documents only its own class.
 *
 * @module
 */
import type { JsonObject } from "../../core/backend.ts";
import type { CountCache } from "../../cache/mod.ts";
import type { Deadline } from "../../_internal/deadline.ts";
import { peekCount } from "../../cache/capability.ts";
import { hashCountKey } from "../../cache/key.ts";
import {
  cachedCount,
  checkBaseUrl,
  checkHeaderValue,
  checkTimeout,
  countByKey,
  countWithin,
  endpointUrl,
  fetchJson,
  jsonHeaders,
  resolveCountCache,
} from "./http_count.ts";

type Fetch = typeof globalThis.fetch;

/** The options every HTTP backend takes, as its own options interface documents them. */
export interface HttpBackendOptions {
  readonly url?: string | undefined;
  readonly apiKey?: string | undefined;
  readonly timeoutSeconds?: number | undefined;
  readonly userAgent?: string | undefined;
  readonly fetch?: Fetch | undefined;
  readonly cache?: CountCache | null | undefined;
}

/** How one backend speaks HTTP. */
export interface HttpCounterSetup {
  /** Names the backend in option errors, such as `"the vLLM backend"`. */
  readonly what: string;
  /** Names the count endpoint in errors, such as `"vLLM /tokenize"`: never a URL. */
  readonly label: string;
  /** The URL when the options name none; without it, `url` is required. */
  readonly defaultUrl?: string;
  /**
   * The header that carries `apiKey`; `Authorization` carries `Bearer <apiKey>`.
   *
   * @default {"Authorization"}
   */
  readonly keyHeader?: string;
  /** Fixed headers sent with every request, such as `anthropic-version`. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** Options for {@linkcode HttpCounter.fetchJson}. */
export interface HttpFetchOptions {
  /** Names the endpoint in errors. @default the setup's label */
  readonly label?: string;
  readonly url: string;
  /** A JSON body to POST; GET without one. */
  readonly body?: string;
  readonly signal: AbortSignal;
  /** The largest answer read, in bytes. */
  readonly maxBytes: number;
  /**
   * Wraps the backend's fetch, for a status or a shape with a meaning of
   * its own (`rejectingFetch`, `framingFetch`).
   */
  readonly adapt?: (fetch: Fetch | undefined) => Fetch;
}

/** Options for {@linkcode HttpCounter.cached}. */
export interface HttpCacheOptions {
  /** The endpoint part of the cache key: the source and the URL (hashed, never stored). */
  readonly key: string;
  readonly contextLength: number;
  /** The payload part of the cache key. */
  readonly json: string;
  readonly deadline: Deadline;
}

/** Options for {@linkcode HttpCounter.count}. */
export interface CounterCountOptions {
  /** The endpoint part of the cache key, such as the source and the URL (hashed, never stored). */
  readonly key: string;
  readonly contextLength: number;
  /** The payload part of the cache key. */
  readonly json: string;
  /** The caller's abort signal. */
  readonly signal: AbortSignal | undefined;
  /** Names the endpoint in errors. @default the setup's label */
  readonly label?: string;
  /** Runs first, under the deadline but outside the cache: a check of the server's limits. */
  readonly check?: (signal: AbortSignal) => Promise<void>;
}

/** Options for {@linkcode HttpCounter.postCount}. */
export interface PostCountOptions {
  /** The backend's source, which joins the URL in the cache key. */
  readonly source: string;
  readonly url: string;
  readonly json: string;
  readonly contextLength: number;
  /** The caller's abort signal. */
  readonly signal: AbortSignal | undefined;
  /** The largest answer read, in bytes. */
  readonly maxBytes: number;
  /** The count in the answer, or a CountError. */
  readonly read: (answer: JsonObject) => number;
  /** Wraps the backend's fetch, for a status with a meaning of its own. */
  readonly adapt?: (fetch: Fetch | undefined) => Fetch;
}

/** One backend's HTTP settings, checked at construction, and the steps of its counts. */
export class HttpCounter {
  /** The checked `url` option, or the setup's default. */
  readonly url: string;
  /** How long one count may take. */
  readonly timeoutMs: number;
  readonly #label: string;
  readonly #headers: Readonly<Record<string, string>>;
  readonly #fetch: Fetch | undefined;
  readonly #cache: CountCache | null | undefined;

  /**
   * Reads and checks the options once; nothing is sent until a count.
   *
   * @throws {TypeError} If `url` breaks a URL rule, or `userAgent` or `apiKey` is not a valid header value.
   * @throws {RangeError} If `timeoutSeconds` is not a finite number greater than 0.
   */
  constructor(setup: HttpCounterSetup, options: HttpBackendOptions = {}) {
    const { what, keyHeader = "Authorization" } = setup;
    const { apiKey, timeoutSeconds = 30 } = options ?? {};
    this.url = checkBaseUrl(what, options?.url ?? setup.defaultUrl);
    this.timeoutMs = checkTimeout(what, timeoutSeconds);
    const headers = { ...jsonHeaders(what, options?.userAgent) };
    if (apiKey !== undefined) {
      const key = checkHeaderValue(what, "apiKey", apiKey);
      headers[keyHeader] = keyHeader === "Authorization"
        ? `Bearer ${key}`
        : key;
    }
    this.#headers = { ...headers, ...setup.headers };
    this.#label = setup.label;
    this.#fetch = options?.fetch;
    this.#cache = options?.cache;
  }

  /** `path` appended to the URL, its query string kept. */
  endpoint(path: string): string {
    return endpointUrl(this.url, path);
  }

  /** The count cache counts go through (the process-wide one by default), or `null`. */
  countCache(): CountCache | null {
    return resolveCountCache(this.#cache);
  }

  /** Clears the count cache (with the default, the process-wide one). */
  clearCache(): Promise<void> {
    return this.countCache()?.clear() ?? Promise.resolve();
  }

  /**
   * Runs one count under one deadline of the backend's timeout, every
   * failure mapped to a CountError naming `label` (by default the setup's).
   */
  within<T>(
    signal: AbortSignal | undefined,
    run: (deadline: Deadline) => Promise<T>,
    label: string = this.#label,
  ): Promise<T> {
    return countWithin({ label, timeoutMs: this.timeoutMs, signal }, run);
  }

  /**
   * `count()` through the count cache. The wait on another caller's
   * identical count runs under this caller's deadline, so that every caller
   * keeps its own limit.
   */
  cached(
    options: HttpCacheOptions,
    count: () => Promise<number>,
  ): Promise<number> {
    const { key, contextLength, json, deadline } = options;
    return cachedCount({
      cache: this.countCache(),
      endpoint: key,
      contextLength,
      payload: json,
      signal: deadline.signal,
    }, count);
  }

  /** One request with the backend's headers: {@linkcode fetchJson}. */
  fetchJson(options: HttpFetchOptions): Promise<JsonObject> {
    return fetchJson({
      label: options.label ?? this.#label,
      url: options.url,
      headers: this.#headers,
      ...(options.body === undefined ? {} : { body: options.body }),
      fetch: options.adapt ? options.adapt(this.#fetch) : this.#fetch,
      signal: options.signal,
      maxBytes: options.maxBytes,
    });
  }

  /**
   * One count under one deadline (`check`, then `run` through the count
   * cache), every failure a CountError naming the endpoint.
   */
  count(
    options: CounterCountOptions,
    run: (deadline: Deadline) => Promise<number>,
  ): Promise<number> {
    const { key, contextLength, json, check } = options;
    const cache = this.countCache();
    // Hashed once, by whichever of the peek and the lookup comes first.
    let hashed: string | undefined;
    const cacheKey = (): string =>
      hashed ??= hashCountKey(key, contextLength, json);
    if (check === undefined && !options.signal?.aborted) {
      // A count the in-process cache holds needs no deadline: starting and
      // clearing one costs more than the lookup.
      const stored = peekCount(cache, cacheKey);
      if (stored !== undefined) return Promise.resolve(stored);
    }
    return this.within(options.signal, async (deadline) => {
      await check?.(deadline.signal);
      // The wait on another caller's identical count runs under this
      // caller's deadline.
      return await countByKey(
        { cache, key: cacheKey, signal: deadline.signal },
        () => run(deadline),
      );
    }, options.label);
  }

  /**
   * A count that is one POST, through the count cache keyed by the source
   * and the URL, the answer read by `read`.
   */
  postCount(options: PostCountOptions): Promise<number> {
    const { url, json, contextLength, signal, maxBytes, read } = options;
    const key = `${options.source} ${url}`;
    return this.count(
      { key, contextLength, json, signal },
      async (deadline) =>
        read(
          await this.fetchJson({
            url,
            body: json,
            signal: deadline.signal,
            maxBytes,
            ...(options.adapt === undefined ? {} : { adapt: options.adapt }),
          }),
        ),
    );
  }
}
