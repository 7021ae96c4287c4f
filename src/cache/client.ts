/**
 * The count cache's client: it carries each count and engine call to its
 * core, in a worker or in process. Apart from `core.ts` so that one core runs
 * in either place.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import {
  type CacheRequest,
  type CacheResponse,
  type CoreSettings,
  fromErrorData,
  toErrorData,
} from "./protocol.ts";
import {
  type Link,
  type LinkEvents,
  openLocalLink,
  WorkerLink,
} from "./links.ts";
import { CountCore } from "./core.ts";
import type { EngineCall, EngineLoader } from "./engine_slot.ts";
import {
  COUNT_CACHE_CORE,
  type CountCache,
  type CountCacheCore,
  type CountCacheKind,
  type CountCacheOptions,
  type CountCacheStats,
} from "./types.ts";
import { CountError } from "../core/errors.ts";
import { errorType } from "../core/error_type.ts";
import { SentMessages } from "./message_delta.ts";
import { type CountTier, throughTier } from "./tier.ts";

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

export function checkSettings(options: CountCacheOptions): CoreSettings {
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

/** What a {@linkcode CountCacheClient} is made with. */
export interface ClientSetup {
  readonly settings: CoreSettings;
  /** The worker entry; `undefined` runs the core in process. */
  readonly workerUrl: URL | undefined;
  /** The engine of an in-process core (a worker makes its own). */
  readonly engine?: EngineLoader;
  /** Called once when the cache is disposed. */
  readonly onDispose?: () => void;
  /**
   * Opens the link to a core in a worker.
   *
   * @default {(url, settings, events) => new WorkerLink(url, settings, events)}
   */
  readonly openWorker?: WorkerOpener;
}

/** Opens the link to a core in a worker loaded from `url`. */
export type WorkerOpener = (
  url: URL,
  settings: CoreSettings,
  events: LinkEvents,
) => Link;

function openWorkerLink(
  url: URL,
  settings: CoreSettings,
  events: LinkEvents,
): Link {
  return new WorkerLink(url, settings, events);
}

/** The client side: ids, aborts, leading computations and the link to the core. */
export class CountCacheClient implements CountCache {
  readonly #settings: CoreSettings;
  readonly #engine: EngineLoader | undefined;
  readonly #onDispose: (() => void) | undefined;
  readonly #openWorker: WorkerOpener;
  #workerUrl: URL | undefined;
  #kind: CountCacheKind;
  #link: Link | undefined;
  #nextId = 0;
  #disposing: Promise<void> | undefined;
  readonly #awaiting = new Map<number, Awaiting>();
  /** Callers whose own compute runs; released on dispose. */
  readonly #leading = new Set<(error: Error) => void>();
  readonly #closing = new Set<Promise<void>>();
  /** The message lists sent to the current core, for deltas. */
  readonly #sent = new SentMessages();
  /** A shared store asked before a count: see {@linkcode CountCacheCore.attachTier}. */
  #tier: CountTier | undefined;
  /** What this cache offers the package's backends and the proxy's shared store. */
  readonly [COUNT_CACHE_CORE]: CountCacheCore;

  constructor(setup: ClientSetup) {
    this.#settings = setup.settings;
    this.#workerUrl = setup.workerUrl;
    this.#kind = setup.workerUrl === undefined
      ? "in-process"
      : "worker_threads";
    this.#engine = setup.engine;
    this.#onDispose = setup.onDispose;
    this.#openWorker = setup.openWorker ?? openWorkerLink;
    this[COUNT_CACHE_CORE] = {
      runEngine: (call, signal) => this.#runEngine(call, signal),
      peek: (key) => this.#peek(key),
      attachTier: (tier) => {
        this.#tier = tier;
      },
    };
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
            const tier = this.#tier;
            const leading = tier === undefined
              ? compute
              : throughTier(tier, key, compute);
            this.#lead(id, link, leading, signal, resolve, reject).finally(
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

  /**
   * A stored count at once, when the core runs in this thread (a hit in the
   * stats); undefined on a miss, with a worker, or once disposed.
   */
  #peek(key: () => string): number | undefined {
    const link = this.#link;
    if (this.#disposing !== undefined || link?.peek === undefined) {
      return undefined;
    }
    let text: string;
    try {
      text = key();
    } catch {
      // The count itself reports a key that cannot be made.
      return undefined;
    }
    return link.peek(text);
  }

  #runEngine(call: EngineCall, signal?: AbortSignal): Promise<unknown> {
    return this.#call(
      (id) => this.#engineRequest(id, call),
      (response) => response.type === "result" ? response : undefined,
      signal,
      (id) => ({ type: "engine", id, call }),
    ).then((response) => response.value);
  }

  /** An engine call: only the new messages when the core has seen the rest. */
  #engineRequest(id: number, call: EngineCall): CacheRequest {
    const messages = call.payload?.messages;
    if (!Array.isArray(messages)) return { type: "engine", id, call };
    const base = this.#sent.record(id, messages);
    if (base === undefined) return { type: "engine", id, call };
    const tail = messages.slice(base.keep);
    return {
      type: "engine",
      id,
      call: { ...call, payload: { ...call.payload, messages: tail } },
      base,
    };
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

  /**
   * A request the core answers itself: a value, or an error rebuilt by name.
   * `whole` is what to send instead when the core asks for a `rebase`.
   */
  #call<T>(
    make: (id: number) => CacheRequest,
    read: (response: CacheResponse) => T | undefined,
    signal?: AbortSignal,
    whole?: (id: number) => CacheRequest,
  ): Promise<T> {
    if (this.#disposing !== undefined) return Promise.reject(disposedError());
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const id = this.#nextId++;
      const onAbort = (): void => {
        if (this.#awaiting.delete(id)) this.#hold();
        reject(signal?.reason);
      };
      const release = (): void => signal?.removeEventListener("abort", onAbort);
      signal?.addEventListener("abort", onAbort, { once: true });
      const answer = (response: CacheResponse): void => {
        if (response.type === "rebase" && whole !== undefined) {
          // Still awaited under the same id: the core counts the whole job.
          this.#ask({ request: whole(id), answer, lost });
          return;
        }
        release();
        if (response.type === "error") {
          reject(fromErrorData(response.error));
          return;
        }
        const value = read(response);
        if (value === undefined) {
          reject(
            new CountError("The count worker answered out of protocol"),
          );
        } else resolve(value);
      };
      const lost = (error: Error): void => {
        release();
        reject(error);
      };
      this.#ask({ request: make(id), answer, lost });
    });
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
      ? openLocalLink(new CountCore(this.#settings, this.#engine), events)
      : this.#openWorker(this.#workerUrl, this.#settings, events);
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
    getLogger(["incontext", "cache"]).warn(
      "The count worker could not start ({errorType}); the count cache runs in process",
      { errorType: errorType(error) },
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
    // The next core remembers none of the messages sent to this one.
    this.#sent.clear();
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

export function workerUrl(): URL {
  // JSR's npm layer ships .js files and never rewrites this URL.
  const file = import.meta.url.endsWith(".js") ? "./worker.js" : "./worker.ts";
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
