/**
 * An in-memory stand-in for a Redis connection, shared by several
 * `SharedStore`s as replicas share one server, with switches for the faults
 * a real one has: a hang, an error, a restart.
 */
import type { StoreConnection } from "../../src/replicas/connection.ts";

/** The server: its records, and how it answers now. */
export class FakeStoreServer {
  readonly records = new Map<string, string>();
  readonly ttls = new Map<string, number>();
  /** `ok`, `hang` (never answers), or `fail` (answers with an error). */
  mode: "ok" | "hang" | "fail" = "ok";
  readonly #hanging: (() => void)[] = [];
  readonly #ready = new Set<() => void>();
  calls = 0;

  /** A connection of one replica; it is ready at once. */
  connect(): StoreConnection {
    let closed = false;
    return {
      mget: (keys) =>
        this.#answer(() => keys.map((key) => this.records.get(key) ?? null)),
      set: (key, value, ttlMs) =>
        this.#answer(() => {
          this.records.set(key, value);
          this.ttls.set(key, ttlMs);
        }),
      onReady: (listener) => {
        this.#ready.add(listener);
        if (!closed) queueMicrotask(listener);
      },
      onError: () => {},
      close: () => {
        closed = true;
        return Promise.resolve();
      },
    };
  }

  /** Answers what hung (as a store that wakes up does), and tells the connections it is ready. */
  release(): void {
    this.answerHung();
    for (const listener of this.#ready) listener();
  }

  /** Answers what hung, as a store that was only slow does: no connection was lost. */
  answerHung(): void {
    for (const wake of this.#hanging.splice(0)) wake();
  }

  #answer<T>(value: () => T): Promise<T> {
    this.calls++;
    if (this.mode === "fail") {
      // As a refused connection fails: its message quotes the address.
      const error = Object.assign(
        new Error("connect ECONNREFUSED 127.0.0.1:6379"),
        { code: "ECONNREFUSED" },
      );
      return Promise.reject(error);
    }
    if (this.mode === "hang") {
      return new Promise((resolve) =>
        this.#hanging.push(() => resolve(value()))
      );
    }
    return Promise.resolve().then(value);
  }
}
