/**
 * The cache core: an LRU of counts bounded by entries and by key bytes, a
 * singleflight table so that one caller computes a missing key while the
 * others wait, and an epoch that keeps counts started before a clear out of
 * the LRU. The worker and the in-process fallback both run this code, behind
 * the same request/response protocol, so they cannot drift apart.
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
import type { HostStore, LocalCountJob, LocalModels } from "../local/models.ts";
import { ReceivedMessages } from "./message_delta.ts";
import { RecentMap } from "../_internal/recent_map.ts";

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

/** UTF-8 length without encoding: keys are counted on every store. */
function byteLength(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      // A surrogate pair is 2 code units and 4 bytes.
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 2;
        i++;
        continue;
      }
    }
    if (code >= 0x800) bytes += 2;
    else if (code >= 0x80) bytes += 1;
  }
  return bytes;
}

/** Counts by key, least recently used first. */
export class Lru {
  readonly #counts = new RecentMap<string, number>();
  readonly #settings: CoreSettings;
  #keyBytes = 0;

  constructor(settings: CoreSettings) {
    this.#settings = settings;
  }

  get size(): number {
    return this.#counts.size;
  }

  get keyBytes(): number {
    return this.#keyBytes;
  }

  get(key: string): number | undefined {
    return this.#counts.use(key);
  }

  set(key: string, count: number): void {
    const bytes = byteLength(key);
    // A key that alone exceeds the budget would evict everything and then itself.
    if (bytes > this.#settings.maxKeyBytes) return;
    if (this.#counts.peek(key) === undefined) this.#keyBytes += bytes;
    this.#counts.put(key, count);
    const { maxEntries, maxKeyBytes } = this.#settings;
    while (this.#counts.size > maxEntries || this.#keyBytes > maxKeyBytes) {
      const oldest = this.#counts.oldest()!;
      this.#counts.delete(oldest);
      this.#keyBytes -= byteLength(oldest);
    }
  }

  clear(): void {
    this.#counts.clear();
    this.#keyBytes = 0;
  }
}

/**
 * The LRU, the singleflight table and the epoch, shared by all sessions;
 * and the local counting host, loaded on the first local count, whose
 * whole-request and piece counts live in the same LRU.
 */
export class CountCore {
  readonly #lru: Lru;
  #flights = new Map<string, Flight>();
  #epoch = 0;
  #hits = 0;
  #misses = 0;
  #pieceHits = 0;
  #pieceMisses = 0;
  #local: Promise<LocalModels> | undefined;
  #models: LocalModels | undefined;

  constructor(settings: CoreSettings) {
    this.#lru = new Lru(settings);
  }

  /** The local counting host; its modules load only when a local count first comes. */
  #host(): Promise<LocalModels> {
    this.#local ??= import("../local/models.ts").then(({ LocalModels }) => {
      const store: HostStore = {
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
      // The core's payloads are its own clones: their messages can keep
      // their template values from render to render.
      return this.#models = new LocalModels(store, { ownsPayloads: true });
    });
    return this.#local;
  }

  /**
   * Runs a local count, render or load; the answer is a value, a text, the
   * files' hashes, or the error's name and message.
   */
  #runLocal(
    request: Extract<
      CacheRequest,
      { type: "count" | "render" | "load" | "tokenize" | "decode" }
    >,
    send: (response: CacheResponse) => void,
  ): void {
    const { id } = request;
    this.#host().then((host): Promise<CacheResponse> => {
      switch (request.type) {
        case "count":
          return host.count(request.job).then((count) => ({
            type: "value",
            id,
            count,
          }));
        case "render":
          return host.render(request.job).then((text) => ({
            type: "rendered",
            id,
            text,
          }));
        case "load":
          return host.load(request.spec).then((files) => ({
            type: "loaded",
            id,
            files,
          }));
        case "tokenize":
          return host.tokenize(request.spec, request.body).then((ids) => ({
            type: "tokens",
            id,
            ids,
          }));
        case "decode":
          return host.decode(request.spec, request.ids, request.form).then((
            value,
          ) => ({ type: "decoded", id, value }));
      }
    }).then(send, (error: unknown) => {
      // LocalModels throws only CountErrors, whose messages hold no prompt text.
      const { name, message } = error instanceof Error
        ? error
        : { name: "CountError", message: "The local count failed" };
      send({ type: "error", id, error: { name, message } });
    });
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
        case "count":
        case "render": {
          const job = wholeJob(received, request);
          if (job === undefined) send({ type: "rebase", id });
          else this.#runLocal({ type: request.type, id, job }, send);
          return;
        }
        case "load":
        case "tokenize":
        case "decode":
          this.#runLocal(request, send);
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
      modelLoads: this.#models?.loads ?? 0,
      segmentHits: this.#pieceHits,
      segmentMisses: this.#pieceMisses,
    };
  }
}

/**
 * A count request's job with its messages whole again, or `undefined` when
 * its delta names a base this session does not remember.
 */
function wholeJob(
  received: ReceivedMessages,
  request: Extract<CacheRequest, { type: "count" | "render" }>,
): LocalCountJob | undefined {
  const { job, base } = request;
  const messages = job.payload.messages;
  if (!Array.isArray(messages)) return job;
  const whole = received.resolve(request.id, messages, base);
  return whole === undefined
    ? undefined
    : { ...job, payload: { ...job.payload, messages: whole } };
}
