/**
 * The engine slot of a count cache's core: work that runs beside the cache's
 * counts, in its worker or in process, reached through the same channel.
 * The cache knows nothing of what an engine does; the bundled one, the
 * local counting engine, plugs in where a core is made (the worker entry
 * and the in-process fallback, see `local_engine.ts`).
 *
 * @module
 */

/** What an engine may keep in its core's LRU, beside the cache's own counts. */
export interface EngineStore {
  /** A whole request's count, or `undefined`; counted as a hit or a miss. */
  readonly lookup: (key: string) => number | undefined;
  /** Stores a whole request's count unless the cache was cleared after `epoch`. */
  store(key: string, count: number, epoch: number): void;
  /** Bumped by every clear. */
  epoch(): number;
  /** Counts of pieces, stored in the same bounded LRU (their own hit counters). */
  readonly pieces: {
    get(key: string): number | undefined;
    set(key: string, count: number): void;
  };
}

/**
 * One call to an engine: an operation by name and its data, which must
 * survive a structured clone. A call whose `payload` holds a `messages`
 * list may cross to the core as a delta of an earlier call's list.
 */
export interface EngineCall {
  /** The operation, by a name the engine knows. */
  readonly op: string;
  /** The request the operation works on, if any. */
  readonly payload?: { readonly messages?: unknown };
  /** The operation's other data. */
  readonly [field: string]: unknown;
}

/** The work a core runs for its clients' engine calls. */
export interface Engine {
  /**
   * Runs one call. The value must survive a structured clone; an error's
   * name and message cross back to the caller, so a message must hold no
   * prompt text.
   */
  run(call: EngineCall): Promise<unknown>;
  /** How many model loads the engine started (the cache's `modelLoads`). */
  readonly loads: number;
}

/** Makes a core's engine on the first call to it; the core hands it its store. */
export type EngineLoader = (store: EngineStore) => Promise<Engine>;

/** Calls to the engine of a cache's core, from its client. */
export interface EngineChannel {
  /**
   * Runs `call` in the core; `signal` rejects this caller only.
   *
   * @throws {CountError} If the core runs no engine, or its worker stops.
   */
  runEngine(call: EngineCall, signal?: AbortSignal): Promise<unknown>;
}
