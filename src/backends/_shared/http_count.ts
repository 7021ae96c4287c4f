/**
 * HTTP plumbing shared by the backends that count over HTTP: option checks,
 * headers, one deadline per count (waits on the cache included), bounded
 * answer reads and error mapping. Messages name the endpoint by a label,
 * never by URL: URLs can carry secrets in their query strings, and answers
 * can echo the prompt, so neither ever reaches an error or a log.
 */
import type { JsonObject } from "../../core/backend.ts";
import { type CountCache, sharedCountCache } from "../../cache/mod.ts";
import { hashCountKey } from "../../cache/key.ts";
import { type Deadline, startDeadline } from "../../_internal/deadline.ts";
import {
  ContextLengthMismatchError,
  CountError,
  countErrorOf,
} from "../../core/errors.ts";
import { errorType, safeCause } from "../../core/error_type.ts";
import { readLimited } from "../../_internal/limited_read.ts";
import { stringifyJson } from "@incontext/engine/vllm";
import { isJsonObject } from "../../core/request.ts";
import { checkHttpUrl } from "../../_internal/url.ts";
import { MAX_TIMEOUT_MS } from "../../_internal/timer_limit.ts";
import { VERSION } from "../../core/version.ts";

/** Answers larger than this fail a count that expects a small JSON object. */
export const SMALL_ANSWER_BYTES = 64 * 1024;

/** Throws a TypeError naming `what` when `url` is not a usable http(s) URL. */
export function checkBaseUrl(what: string, url: unknown): string {
  const rule = typeof url === "string" ? checkHttpUrl(url) : "must be a string";
  if (rule !== undefined) {
    throw new TypeError(`Cannot create ${what} as 'url' ${rule}`);
  }
  return url as string;
}

/** The timeout in milliseconds; throws a RangeError naming `what` when invalid. */
export function checkTimeout(what: string, timeoutSeconds: unknown): number {
  if (
    typeof timeoutSeconds !== "number" || !Number.isFinite(timeoutSeconds) ||
    timeoutSeconds <= 0
  ) {
    throw new RangeError(
      `Cannot create ${what} as 'timeoutSeconds' must be a finite number greater than 0: current value is ${
        String(timeoutSeconds)
      }`,
    );
  }
  return Math.min(Math.ceil(timeoutSeconds * 1000), MAX_TIMEOUT_MS);
}

/** Throws a TypeError when a header value is blank or holds a line break or NUL; never echoes it. */
export function checkHeaderValue(
  what: string,
  name: string,
  value: unknown,
): string {
  if (
    typeof value !== "string" || value.trim() === "" || /[\0\r\n]/.test(value)
  ) {
    throw new TypeError(
      `Cannot create ${what} as '${name}' must be a non-blank string without line breaks`,
    );
  }
  return value;
}

/**
 * JSON request headers with a checked `User-Agent` and any extra headers
 * (credentials), each checked as a header value.
 */
export function jsonHeaders(
  what: string,
  userAgent: unknown = `incontext/${VERSION}`,
  extra: Readonly<Record<string, { option: string; value: unknown }>> = {},
): Readonly<Record<string, string>> {
  const headers: Record<string, string> = {
    "Content-Type": "application/json",
    "User-Agent": checkHeaderValue(what, "userAgent", userAgent),
  };
  for (const [header, { option, value }] of Object.entries(extra)) {
    if (value !== undefined) {
      headers[header] = checkHeaderValue(what, option, value);
    }
  }
  return headers;
}

/** Throws a RangeError unless `contextLength` is a positive safe integer. */
export function checkContextLength(
  what: string,
  contextLength: unknown,
): number {
  if (
    typeof contextLength !== "number" || !Number.isSafeInteger(contextLength) ||
    contextLength < 1
  ) {
    throw new RangeError(
      `Cannot count with ${what} as 'contextLength' must be a positive integer: current value is ${
        String(contextLength)
      }`,
    );
  }
  return contextLength;
}

/**
 * Throws a CountError unless the server's own context length (`name`, such
 * as `"llama.cpp n_ctx"`) is the configured one: budgets computed against
 * another window would be wrong.
 */
export function checkServedContext(
  name: string,
  served: number,
  contextLength: number,
): void {
  if (served !== contextLength) {
    throw new ContextLengthMismatchError({
      servedBy: name,
      served,
      configured: contextLength,
    });
  }
}

/** Options for {@linkcode fetchJson}. */
export interface FetchJsonOptions {
  /** Names the endpoint in errors, such as `"llama.cpp /tokenize"`: never a URL. */
  readonly label: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** A JSON body to POST; GET without one. */
  readonly body?: string;
  readonly fetch?: typeof globalThis.fetch | undefined;
  /** The count's deadline signal. */
  readonly signal: AbortSignal;
  /** The largest answer read, in bytes. */
  readonly maxBytes: number;
}

/**
 * A count endpoint answered with a redirect. It is never followed: the
 * request carries the prompt, and a redirect to another origin would send
 * it there (fetch drops only the credentials).
 */
export class CountRedirectError extends CountError {
  /** @param label Names the endpoint: never a URL (nor the redirect's target). */
  constructor(label: string, status: number) {
    super(`${label} answered a redirect (HTTP ${status}), not followed`);
    this.name = "CountRedirectError";
  }
}

/** Whether `response` is a redirect that `redirect: "manual"` left unfollowed. */
function isRedirect(response: Response): boolean {
  return response.type === "opaqueredirect" ||
    (response.status >= 300 && response.status < 400);
}

/**
 * Sends one request and returns the answer's JSON object. A non-2xx answer
 * (429 and 5xx included: no retries on the request path) fails at once with
 * its status only: its body may echo the prompt, so it is cancelled unread.
 * Redirects are not followed.
 *
 * @throws {CountRedirectError} For a redirect.
 * @throws {CountError} For any other non-2xx status, an answer over
 * `maxBytes`, or an answer that is not a JSON object. Network and abort
 * errors propagate as they are, for {@linkcode countWithin} to name.
 */
export async function fetchJson(
  options: FetchJsonOptions,
): Promise<JsonObject> {
  const fetch = options.fetch ?? globalThis.fetch;
  const response = await fetch(options.url, {
    method: options.body === undefined ? "GET" : "POST",
    headers: options.headers,
    ...(options.body === undefined ? {} : { body: options.body }),
    signal: options.signal,
    redirect: "manual",
  });
  const { label, maxBytes } = options;
  if (isRedirect(response)) {
    await response.body?.cancel().catch(() => {});
    throw new CountRedirectError(label, response.status);
  }
  if (!response.ok) {
    await response.body?.cancel().catch(() => {});
    throw new CountError(`${label} answered HTTP ${response.status}`);
  }
  const tooLarge = () =>
    new CountError(`${label} answered more than ${maxBytes} bytes`);
  if (Number(response.headers.get("content-length")) > maxBytes) {
    await response.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  const bytes = await readLimited(response.body, maxBytes);
  if (bytes === undefined) throw tooLarge();
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new CountError(`${label} returned a non-JSON response`);
  }
  if (!isJsonObject(body)) {
    throw new CountError(`${label} returned a non-object response`);
  }
  return body;
}

/** Options for {@linkcode countWithin}. */
export interface CountWithinOptions {
  /** Names the endpoint in errors: never a URL. */
  readonly label: string;
  readonly timeoutMs: number;
  /** The caller's abort signal. */
  readonly signal?: AbortSignal | undefined;
}

/**
 * Runs one count under one deadline and maps every failure to a CountError
 * whose message and cause carry no URL, prompt or provider text: an abort
 * by the caller, the timeout, or the type name of any other error.
 */
export async function countWithin<T>(
  options: CountWithinOptions,
  run: (deadline: Deadline) => Promise<T>,
): Promise<T> {
  const { label, signal } = options;
  if (signal?.aborted) {
    throw new CountError(`${label} count was aborted`, {
      cause: safeCause(signal.reason),
    });
  }
  const deadline = startDeadline(options.timeoutMs, signal);
  try {
    return await run(deadline);
  } catch (thrown) {
    const error = countErrorOf(thrown);
    if (error instanceof CountError) throw error;
    if (signal?.aborted) {
      throw new CountError(`${label} count was aborted`, {
        cause: safeCause(error),
      });
    }
    if (deadline.expired) {
      throw new CountError(
        `${label} did not answer within ${options.timeoutMs / 1000} s`,
        { cause: safeCause(error) },
      );
    }
    throw new CountError(`${label} request failed: ${errorType(error)}`, {
      cause: safeCause(error),
    });
  } finally {
    deadline.clear();
  }
}

/**
 * The cache a backend's `cache` option names: `undefined` is the
 * process-wide one, looked up at each count so that a disposed one is
 * replaced; `null` is none.
 */
export function resolveCountCache(
  cache: CountCache | null | undefined,
): CountCache | null {
  return cache === undefined ? sharedCountCache() : cache;
}

/** Options for {@linkcode cachedCount}: the cache and what its key is made of. */
export interface CachedCountOptions {
  /** The cache to count through; `null` counts straight through. */
  readonly cache: CountCache | null;
  /** The endpoint: hashed into the key, never stored, so two servers never share counts. */
  readonly endpoint: string;
  readonly contextLength: number;
  /** The payload's JSON text. */
  readonly payload: string;
  /** Stops the wait on another caller's identical count. */
  readonly signal?: AbortSignal | undefined;
}

/**
 * `count()` through `options.cache` under a key made of the endpoint, the
 * context length and the payload; straight through when the cache is null.
 */
export function cachedCount(
  options: CachedCountOptions,
  count: () => Promise<number>,
): Promise<number> {
  const { cache, endpoint, contextLength, payload, signal } = options;
  return countByKey({
    cache,
    key: () => hashCountKey(endpoint, contextLength, payload),
    signal,
  }, count);
}

/** Options for {@linkcode countByKey}. */
export interface KeyedCountOptions {
  /** The cache to count through; `null` counts straight through. */
  readonly cache: CountCache | null;
  /** Makes the key; called only with a cache. */
  readonly key: () => string;
  /** Stops the wait on another caller's identical count. */
  readonly signal?: AbortSignal | undefined;
}

/**
 * {@linkcode cachedCount} under the key `key()` makes (called only with a
 * cache): for a caller that may have made it already.
 */
export async function countByKey(
  options: KeyedCountOptions,
  count: () => Promise<number>,
): Promise<number> {
  const { cache, key, signal } = options;
  if (cache === null) return await count();
  return await cache.getOrCount(key(), count, signal);
}

/** Options for {@linkcode payloadJson}. */
export interface PayloadJsonOptions {
  /**
   * Write NaN and the infinities as Python's `json` module writes and reads
   * them (`NaN`, `Infinity`), for a server that reads the request with
   * `json.loads` (vLLM, SGLang), so that it counts the values the request
   * holds; otherwise they are written as `null`, as JSON has them.
   *
   * @default {false}
   */
  readonly python?: boolean;
}

/** JSON text of a payload, or a CountError when it cannot be serialised. */
export function payloadJson(
  payload: unknown,
  options: PayloadJsonOptions = {},
): string {
  try {
    const json = options.python
      ? stringifyJson(payload)
      : JSON.stringify(payload);
    if (typeof json === "string") return json;
  } catch (error) {
    throw new CountError(
      "Cannot count the request as it is not serialisable to JSON",
      { cause: safeCause(error) },
    );
  }
  throw new CountError("Cannot count the request as it is not JSON");
}

/** Options for {@linkcode answerInteger}. */
export interface AnswerIntegerOptions {
  /** Names the endpoint in errors: never a URL. */
  readonly label: string;
  /** The answer's field to read. */
  readonly field: string;
  /**
   * The smallest valid value.
   *
   * @default {0}
   */
  readonly min?: number;
}

/** A safe integer of at least `min` read from an answer field, or a CountError naming the field. */
export function answerInteger(
  body: JsonObject,
  options: AnswerIntegerOptions,
): number {
  const { label, field, min = 0 } = options;
  const value = body[field];
  if (
    typeof value !== "number" || !Number.isSafeInteger(value) || value < min
  ) {
    throw new CountError(`${label} returned an invalid ${field}`);
  }
  return value;
}

/** Joins a base URL (query string kept) and a path: `http://h:1/x?k=v` + `/tokenize`. */
export function endpointUrl(base: string, path: string): string {
  const url = new URL(base);
  url.pathname = `${url.pathname.replace(/\/+$/, "")}${path}`;
  return url.href;
}
