/**
 * The messages between a count cache client and the core that holds the
 * counts, how errors travel between them, and the two links that carry them:
 * a `node:worker_threads` worker reached by a MessagePort, or a core in the
 * same thread reached by microtasks.
 *
 * Every request that expects an answer carries an id chosen by the client;
 * the answer carries the same id. Cache keys and counts cross the channel;
 * a local count also sends its `/tokenize` payload (structured clone: about
 * half the caller's cost of JSON text at 500 KB; a grown conversation sends
 * only its new messages, see `_message_delta.ts`), and its errors come back
 * as name and message only.
 *
 * @module
 */

import type { MessagePort, Worker } from "node:worker_threads";
import { CountCore } from "./core.ts";
import { CountError, TemplateRejectedError } from "../core/errors.ts";
import type { LocalCountJob, ModelSpec } from "../local/models.ts";
import type { FilesSha256 } from "../local/chat_render.ts";
import type { DeltaBase } from "./message_delta.ts";
import type { JsonObject } from "../core/backend.ts";
import type { DecodeForm } from "../local/tokenize.ts";

/** An error as data: what survives a structured clone and rebuilds its class. */
export interface ErrorData {
  readonly name: string;
  readonly message: string;
}

/** Counters of a cache core. */
export interface StatsData {
  readonly entries: number;
  readonly keyBytes: number;
  readonly hits: number;
  readonly misses: number;
  readonly epoch: number;
  readonly modelLoads: number;
  readonly segmentHits: number;
  readonly segmentMisses: number;
}

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
   * Counts a request in the core: answered with `value`, `error`, or
   * `rebase` when `base` names messages the core does not remember (the
   * client then sends the whole job under the same id). With `base`, the
   * payload's messages are those after the base's first `keep`.
   */
  | {
    readonly type: "count";
    readonly id: number;
    readonly job: LocalCountJob;
    readonly base?: DeltaBase;
  }
  /**
   * Renders a chat request's prompt in the core (for servers whose
   * `/tokenize` takes text): answered with `rendered`, `error` or `rebase`,
   * with `base` as for `count`.
   */
  | {
    readonly type: "render";
    readonly id: number;
    readonly job: LocalCountJob;
    readonly base?: DeltaBase;
  }
  /** Loads a model folder in the core: answered with `loaded` or `error`. */
  | { readonly type: "load"; readonly id: number; readonly spec: ModelSpec }
  /** The ids of a `/tokenize` body: answered with `tokens` or `error`. */
  | {
    readonly type: "tokenize";
    readonly id: number;
    readonly spec: ModelSpec;
    readonly body: JsonObject;
  }
  /** The text or token strings of ids: answered with `decoded` or `error`. */
  | {
    readonly type: "decode";
    readonly id: number;
    readonly spec: ModelSpec;
    readonly ids: readonly number[];
    readonly form: DecodeForm;
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
  | {
    readonly type: "loaded";
    readonly id: number;
    readonly files: FilesSha256;
  }
  | { readonly type: "rendered"; readonly id: number; readonly text: string }
  | { readonly type: "tokens"; readonly id: number; readonly ids: number[] }
  | {
    readonly type: "decoded";
    readonly id: number;
    readonly value: string | string[];
  };

/** What `count_worker.ts` receives as `workerData`. */
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
    case "AbortError":
    case "TimeoutError":
      return new DOMException(data.message, data.name);
    case "TypeError":
      return new TypeError(data.message);
    case "RangeError":
      return new RangeError(data.message);
    default: {
      const error = new Error(data.message);
      error.name = data.name;
      return error;
    }
  }
}

/** The answer to a request that cannot cross a port (a function in a payload, ...). */
function unsendable(id: number): CacheResponse {
  return {
    type: "error",
    id,
    error: {
      name: "CountError",
      message:
        "Cannot count the request as it cannot be sent to the count worker",
    },
  };
}

/** Posts, or answers the request's own failure when it cannot be cloned. */
function postTo(
  port: MessagePort,
  request: CacheRequest,
  events: LinkEvents,
): void {
  try {
    port.postMessage(request);
  } catch {
    queueMicrotask(() => events.response(unsendable(request.id)));
  }
}

/** What a link reports to its client. */
export interface LinkEvents {
  response(response: CacheResponse): void;
  /** The core is gone; `started` tells a worker that never listened from one that crashed. */
  down(error: unknown, started: boolean): void;
}

/** One client's channel to one core. */
export interface Link {
  post(request: CacheRequest): void;
  /** Keeps the process alive while `busy`, so that an idle cache never does. */
  hold(busy: boolean): void;
  /** Ends the channel; resolves once nothing of it is left running. */
  close(): Promise<void>;
  /**
   * A stored count at once, from a core in this thread; a worker's link
   * has none (its answers take a round trip).
   */
  peek?(key: string): number | undefined;
}

/** A core in this thread. Answers arrive in a later microtask, as from a worker. */
export function openLocalLink(
  settings: CoreSettings,
  events: LinkEvents,
): Link {
  let open = true;
  const session = new CountCore(settings).connect((response) => {
    queueMicrotask(() => open && events.response(response));
  });
  return {
    post: (request) => {
      let sent = request;
      // Cloned as a worker's port would: the same failures, and a caller's
      // later change to its request cannot reach the count.
      try {
        if (request.type === "count" || request.type === "render") {
          sent = { ...request, job: structuredClone(request.job) };
        } else if (request.type === "tokenize") {
          sent = { ...request, body: structuredClone(request.body) };
        }
      } catch {
        queueMicrotask(() => open && events.response(unsendable(request.id)));
        return;
      }
      queueMicrotask(() => open && session.receive(sent));
    },
    hold: () => {},
    peek: (key) => open ? session.peek(key) : undefined,
    close: () => {
      open = false;
      session.close();
      return Promise.resolve();
    },
  };
}

/**
 * A core in a `node:worker_threads` worker: the one worker API that both
 * Deno and Node can unref, so an idle cache does not keep a process alive.
 */
export class WorkerLink implements Link {
  readonly #events: LinkEvents;
  readonly #opening: Promise<void>;
  #queue: CacheRequest[] = [];
  #worker: Worker | undefined;
  #port: MessagePort | undefined;
  #exited: Promise<unknown> = Promise.resolve();
  #state: "opening" | "started" | "down" | "closed" = "opening";
  #busy = false;

  constructor(url: URL, settings: CoreSettings, events: LinkEvents) {
    this.#events = events;
    this.#opening = this.#open(url, settings);
  }

  post(request: CacheRequest): void {
    if (this.#port !== undefined) postTo(this.#port, request, this.#events);
    else if (this.#state === "opening") this.#queue.push(request);
  }

  hold(busy: boolean): void {
    if (busy === this.#busy) return;
    this.#busy = busy;
    this.#applyHold();
  }

  async close(): Promise<void> {
    this.#state = "closed";
    await this.#opening;
    const port = this.#port;
    this.#port = undefined;
    port?.close();
    await this.#worker?.terminate();
    await this.#exited;
  }

  /** Stops the worker as a crash would: the client sees it go down. */
  async terminate(): Promise<void> {
    await this.#opening;
    await this.#worker?.terminate();
    await this.#exited;
  }

  async #open(url: URL, settings: CoreSettings): Promise<void> {
    try {
      // A literal specifier, loaded only when a cache first needs its worker.
      const threads = await import("node:worker_threads");
      if (this.#state !== "opening") return;
      const { port1, port2 } = new threads.MessageChannel();
      const workerData: CountWorkerData = {
        kind: "incontext-count-worker",
        port: port2,
        ...settings,
      };
      try {
        // Deno throws here, synchronously, when it may not read the worker file.
        this.#worker = new threads.Worker(url, {
          workerData,
          transferList: [port2],
          // The worker needs no flags, and Node's default (the parent's
          // execArgv) breaks it: under `node --input-type=module -e`, the
          // inherited --input-type fails the load (ERR_INPUT_TYPE_NOT_ALLOWED).
          execArgv: [],
        });
      } catch (error) {
        port1.close();
        throw error;
      }
      this.#listen(this.#worker, port1);
    } catch (error) {
      this.#down(error);
    }
  }

  #listen(worker: Worker, port: MessagePort): void {
    this.#exited = new Promise((resolve) => worker.once("exit", resolve));
    // Without an 'error' listener a failed worker would be an uncaught error.
    worker.on("error", (error) => this.#down(error));
    worker.once(
      "exit",
      (code) =>
        this.#down(new CountError(`The count worker exited with code ${code}`)),
    );
    port.on("message", (response: CacheResponse) => {
      if (response.type === "ready") {
        if (this.#state === "opening") this.#state = "started";
      } else this.#events.response(response);
    });
    this.#port = port;
    for (const request of this.#queue.splice(0)) {
      postTo(port, request, this.#events);
    }
    // In Node, adding a 'message' listener refs the port: unref only after it.
    this.#applyHold();
  }

  #applyHold(): void {
    for (const handle of [this.#worker, this.#port]) {
      if (this.#busy) handle?.ref();
      else handle?.unref();
    }
  }

  #down(error: unknown): void {
    if (this.#state !== "opening" && this.#state !== "started") return;
    const started = this.#state === "started";
    this.#state = "down";
    this.#port?.close();
    this.#port = undefined;
    this.#queue = [];
    this.#events.down(error, started);
  }
}
