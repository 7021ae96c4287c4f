/**
 * The two links that carry the protocol between a client and a core: a
 * `node:worker_threads` worker reached by a MessagePort, or a core in the
 * same thread reached by microtasks.
 *
 * @module
 */

import type { MessagePort, Worker } from "node:worker_threads";
import { CountError } from "../core/errors.ts";
import type { CountCore } from "./core.ts";
import type {
  CacheRequest,
  CacheResponse,
  CoreSettings,
  CountWorkerData,
} from "./protocol.ts";

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

/** A link to `core`, in this thread. Answers arrive in a later microtask, as from a worker. */
export function openLocalLink(core: CountCore, events: LinkEvents): Link {
  let open = true;
  const session = core.connect((response) => {
    queueMicrotask(() => open && events.response(response));
  });
  return {
    post: (request) => {
      let sent = request;
      // Cloned as a worker's port would: the same failures, and a caller's
      // later change to its request cannot reach the count.
      try {
        if (request.type === "engine") {
          sent = { ...request, call: structuredClone(request.call) };
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
