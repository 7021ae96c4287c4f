/**
 * The cache core: an LRU of counts bounded by entries and by key bytes, a
 * singleflight table so that one caller computes a missing key while the
 * others wait, and an epoch that keeps counts started before a clear out of
 * the LRU. The worker and the in-process fallback both run this code, behind
 * the same request/response protocol, so they cannot drift apart. An
 * engine, when one is plugged in, runs beside the counts and keeps its own
 * in the same LRU.
 *
 * @module
 */

import type {
  CacheRequest,
  CacheResponse,
  CoreSettings,
  ErrorData,
  StatsData,
} from "./protocol.ts";
import type {
  Engine,
  EngineCall,
  EngineLoader,
  EngineStore,
} from "./engine_slot.ts";
import { CountError } from "../core/errors.ts";
import { Lru } from "./lru.ts";
import { ReceivedMessages } from "./message_delta.ts";

/** One caller of a flight: told either to compute, or the flight's outcome. */
interface Waiter {
  lead(): void;
  settle(response: { count: number } | { error: ErrorData }): void;
}

/** The computation of one key, shared by its leader and its waiters. */
interface Flight {
  readonly key: string;
  readonly epoch: number;
  leader: Waiter;
  readonly waiters: Waiter[];
}

/** A client's view of the core: feed it requests, close it when the client goes. */
export interface CoreSession {
  receive(request: CacheRequest): void;
  /** A stored count, at once (a hit), or undefined (nothing counted as a miss). */
  peek(key: string): number | undefined;
  close(): void;
}

/**
 * The LRU, the singleflight table and the epoch, shared by all sessions;
 * and the engine, made on its first call, whose counts live in the same LRU.
 */
export class CountCore {
  readonly #lru: Lru;
  readonly #loadEngine: EngineLoader | undefined;
  #flights = new Map<string, Flight>();
  #epoch = 0;
  #hits = 0;
  #misses = 0;
  #pieceHits = 0;
  #pieceMisses = 0;
  #loading: Promise<Engine> | undefined;
  #engine: Engine | undefined;

  /**
   * @param settings The LRU's bounds.
   * @param engine Makes the engine that answers engine calls; without it they fail.
   */
  constructor(settings: CoreSettings, engine?: EngineLoader) {
    this.#lru = new Lru(settings);
    this.#loadEngine = engine;
  }

  /** The engine; it is made, and its modules load, only when a call first comes. */
  #engineReady(): Promise<Engine> {
    const load = this.#loadEngine;
    if (load === undefined) {
      return Promise.reject(
        new CountError("Cannot run the call as this count cache has no engine"),
      );
    }
    this.#loading ??= load(this.#store()).then((engine) =>
      this.#engine = engine
    );
    return this.#loading;
  }

  #store(): EngineStore {
    return {
      lookup: (key) => {
        const count = this.#lru.get(key);
        if (count === undefined) this.#misses++;
        else this.#hits++;
        return count;
      },
      store: (key, count, epoch) => {
        if (epoch === this.#epoch) this.#lru.set(key, count);
      },
      epoch: () => this.#epoch,
      pieces: {
        get: (key) => {
          const count = this.#lru.get(key);
          if (count === undefined) this.#pieceMisses++;
          else this.#pieceHits++;
          return count;
        },
        set: (key, count) => this.#lru.set(key, count),
      },
    };
  }

  /** Runs an engine call; the answer is its value, or the error's name and message. */
  #runEngine(
    id: number,
    call: EngineCall,
    send: (response: CacheResponse) => void,
  ): void {
    this.#engineReady().then((engine) => engine.run(call)).then(
      (value) => send({ type: "result", id, value }),
      (error: unknown) => {
        // An engine's errors hold no prompt text (its contract).
        const { name, message } = error instanceof Error
          ? error
          : { name: "CountError", message: "The engine call failed" };
        send({ type: "error", id, error: { name, message } });
      },
    );
  }

  /**
   * Opens a session for one client. Responses go to `send`; the session
   * remembers which flight each of the client's request ids belongs to.
   */
  connect(send: (response: CacheResponse) => void): CoreSession {
    const joined = new Map<number, { flight: Flight; waiter: Waiter }>();
    const received = new ReceivedMessages();
    const receive = (request: CacheRequest): void => {
      const { id } = request;
      switch (request.type) {
        case "get": {
          const waiter: Waiter = {
            lead: () => send({ type: "lead", id }),
            settle: (outcome) => {
              joined.delete(id);
              send(
                "count" in outcome
                  ? { type: "value", id, ...outcome }
                  : { type: "error", id, ...outcome },
              );
            },
          };
          const found = this.#get(request.key, waiter);
          if (typeof found === "number") {
            send({ type: "value", id, count: found });
          } else joined.set(id, { flight: found, waiter });
          return;
        }
        case "fill":
        case "fail":
        case "cancel": {
          const entry = joined.get(id);
          if (entry === undefined) return;
          joined.delete(id);
          if (request.type === "cancel") {
            this.#leave(entry.flight, entry.waiter);
          } else if (entry.flight.leader === entry.waiter) {
            this.#settle(
              entry.flight,
              request.type === "fill" ? { count: request.count } : {
                error: request.error,
              },
            );
          }
          return;
        }
        case "clear":
          this.#clear();
          send({ type: "cleared", id });
          return;
        case "stats":
          send({ type: "stats", id, stats: this.#stats() });
          return;
        case "engine": {
          const call = wholeCall(received, request);
          if (call === undefined) send({ type: "rebase", id });
          else this.#runEngine(id, call, send);
        }
      }
    };
    const close = (): void => {
      for (const { flight, waiter } of joined.values()) {
        this.#leave(flight, waiter);
      }
      joined.clear();
    };
    const peek = (key: string): number | undefined => {
      const count = this.#lru.get(key);
      if (count !== undefined) this.#hits++;
      return count;
    };
    return { receive, peek, close };
  }

  #get(key: string, waiter: Waiter): number | Flight {
    const count = this.#lru.get(key);
    if (count !== undefined) {
      this.#hits++;
      return count;
    }
    this.#misses++;
    const running = this.#flights.get(key);
    if (running !== undefined) {
      running.waiters.push(waiter);
      return running;
    }
    const flight: Flight = {
      key,
      epoch: this.#epoch,
      leader: waiter,
      waiters: [],
    };
    this.#flights.set(key, flight);
    waiter.lead();
    return flight;
  }

  #settle(
    flight: Flight,
    outcome: { count: number } | { error: ErrorData },
  ): void {
    if (this.#flights.get(flight.key) === flight) {
      this.#flights.delete(flight.key);
    }
    // Failures are never stored; a count started before a clear is not either.
    if ("count" in outcome && flight.epoch === this.#epoch) {
      this.#lru.set(flight.key, outcome.count);
    }
    for (const waiter of flight.waiters.splice(0)) waiter.settle(outcome);
  }

  /** A waiter leaves; a leader that leaves hands the computation to the next waiter. */
  #leave(flight: Flight, waiter: Waiter): void {
    if (flight.leader !== waiter) {
      const index = flight.waiters.indexOf(waiter);
      if (index >= 0) flight.waiters.splice(index, 1);
      return;
    }
    const next = flight.waiters.shift();
    if (next !== undefined) {
      flight.leader = next;
      next.lead();
    } else if (this.#flights.get(flight.key) === flight) {
      this.#flights.delete(flight.key);
    }
  }

  #clear(): void {
    this.#epoch++;
    this.#lru.clear();
    // Running flights still answer their own waiters, but new callers must
    // not join a count that started before the clear.
    this.#flights = new Map();
  }

  #stats(): StatsData {
    return {
      entries: this.#lru.size,
      keyBytes: this.#lru.keyBytes,
      hits: this.#hits,
      misses: this.#misses,
      epoch: this.#epoch,
      modelLoads: this.#engine?.loads ?? 0,
      segmentHits: this.#pieceHits,
      segmentMisses: this.#pieceMisses,
    };
  }
}

/**
 * An engine call with its payload's messages whole again, or `undefined`
 * when its delta names a base this connection does not remember.
 */
function wholeCall(
  received: ReceivedMessages,
  request: Extract<CacheRequest, { type: "engine" }>,
): EngineCall | undefined {
  const { call, base } = request;
  const messages = call.payload?.messages;
  if (!Array.isArray(messages)) return call;
  const whole = received.resolve(request.id, messages, base);
  return whole === undefined
    ? undefined
    : { ...call, payload: { ...call.payload, messages: whole } };
}
