/**
 * The messages between a count cache client and the core that holds the
 * counts, and how errors travel between them (`links.ts` carries them).
 *
 * Every request that expects an answer carries an id chosen by the client;
 * the answer carries the same id. Cache keys and counts cross the channel;
 * an engine call sends its data (a structured clone, cheaper for the caller
 * than JSON text; a grown conversation sends only its new messages, see
 * `message_delta.ts`), and its errors come back as name and message only.
 *
 * @module
 */

import {
  CountError,
  countErrorOf,
  TemplateRejectedError,
  UnsupportedTemplateError,
} from "../core/errors.ts";
import type { EngineCall } from "./engine_slot.ts";
import type { CountCacheStats } from "./types.ts";
import type { DeltaBase } from "./message_delta.ts";

/** An error as data: what survives a structured clone and rebuilds its class. */
export interface ErrorData {
  readonly name: string;
  readonly message: string;
}

/** Counters of a cache core: the cache's own counters, as they cross the port. */
export type StatsData = CountCacheStats;

/** Bounds of a cache core's LRU. */
export interface CoreSettings {
  readonly maxEntries: number;
  readonly maxKeyBytes: number;
}

/**
 * What the client asks. `get` is answered with `value`, `lead` or `error`;
 * `fill`, `fail` and `cancel` refer to the id of an earlier `get` and are
 * not answered.
 */
export type CacheRequest =
  | { readonly type: "get"; readonly id: number; readonly key: string }
  | { readonly type: "fill"; readonly id: number; readonly count: number }
  | { readonly type: "fail"; readonly id: number; readonly error: ErrorData }
  /** The caller gave up: a waiter leaves, a leader hands over to the next waiter. */
  | { readonly type: "cancel"; readonly id: number }
  | { readonly type: "clear"; readonly id: number }
  | { readonly type: "stats"; readonly id: number }
  /**
   * Runs an engine call in the core: answered with `result`, `error`, or
   * `rebase` when `base` names messages the core does not remember (the
   * client then sends the whole call under the same id). With `base`, the
   * call's `payload.messages` are those after the base's first `keep`.
   */
  | {
    readonly type: "engine";
    readonly id: number;
    readonly call: EngineCall;
    readonly base?: DeltaBase;
  };

/** What the core answers; `ready` comes first, unasked, once the core listens. */
export type CacheResponse =
  | { readonly type: "ready" }
  | { readonly type: "value"; readonly id: number; readonly count: number }
  /** Nobody is counting this key: the client must compute and then fill or fail. */
  | { readonly type: "lead"; readonly id: number }
  /** A delta's base is unknown here: send the whole job. */
  | { readonly type: "rebase"; readonly id: number }
  | { readonly type: "error"; readonly id: number; readonly error: ErrorData }
  | { readonly type: "cleared"; readonly id: number }
  | { readonly type: "stats"; readonly id: number; readonly stats: StatsData }
  | { readonly type: "result"; readonly id: number; readonly value: unknown };

/** What `worker.ts` receives as `workerData`. */
export interface CountWorkerData extends CoreSettings {
  readonly kind: "incontext-count-worker";
  /** The worker's end of the channel; it is in the transfer list. */
  readonly port: unknown;
}

/**
 * Turns a thrown value into data. Only the name and message travel: a stack
 * or a cause could hold text that does not belong in another thread's logs.
 */
export function toErrorData(error: unknown): ErrorData {
  if (
    typeof error === "object" && error !== null &&
    typeof (error as ErrorData).name === "string" &&
    typeof (error as ErrorData).message === "string"
  ) {
    return {
      name: (error as ErrorData).name,
      message: (error as ErrorData).message,
    };
  }
  return { name: "Error", message: "The count failed with a non-Error value" };
}

/** Rebuilds an error from data as the class a caller would test for. */
export function fromErrorData(data: ErrorData): Error {
  switch (data.name) {
    case "CountError":
      return new CountError(data.message);
    case "TemplateRejectedError":
      return new TemplateRejectedError();
    case "UnsupportedTemplateError":
      return UnsupportedTemplateError.fromMessage(data.message);
    case "AbortError":
    case "TimeoutError":
      return new DOMException(data.message, data.name);
    case "TypeError":
      return new TypeError(data.message);
    case "RangeError":
      return new RangeError(data.message);
    default: {
      // The engine's own errors, thrown in the worker, by their names.
      const error = new Error(data.message);
      error.name = data.name;
      return countErrorOf(error) as Error;
    }
  }
}
