/**
 * How often an event that can repeat without end is logged: the first of
 * each cause at once, then at most one per interval, which says how many
 * came in between. The caller counts every event in a metric: the log says
 * that something happens, the metric how often.
 *
 * A cause is a key the caller builds from fixed sets (a backend's label, a
 * direction), never from what a client chooses: the causes, and so the
 * lines per interval, are bounded by the configuration, not by the traffic.
 *
 * @module
 */

import type { Logger } from "@logtape/logtape";

/** The least time between two warnings of one cause: a minute. */
export const WARNING_INTERVAL_MS = 60_000;

/** Options for {@linkcode LogLimit}. */
export interface LogLimitOptions {
  /**
   * The least time between two logged events of one cause, in milliseconds.
   *
   * @default {WARNING_INTERVAL_MS}
   */
  readonly intervalMs?: number;
  /**
   * The clock, in milliseconds.
   *
   * @default Date.now
   */
  readonly now?: () => number;
}

/** One event to log through a {@linkcode LogLimit}. */
export interface LimitedRecord {
  /** What it is one of: never a value a client chose. */
  readonly cause: string;
  /** The level when it is logged; one held back is logged at `debug`. */
  readonly level: "warn" | "info";
  /** The event, a message template of `properties`. */
  readonly message: string;
  /** Added to the first of its cause: what becomes of the next ones. */
  readonly first: string;
  /** Added to a later one; `{held}` is how many were held back before it. */
  readonly later: string;
  readonly properties: Readonly<Record<string, unknown>>;
}

/** One cause: when it was last logged, and the events held back since. */
interface Cause {
  loggedAt: number;
  held: number;
}

/** Which events of each cause are logged, and how many were held back between. */
export class LogLimit {
  readonly #intervalMs: number;
  readonly #now: () => number;
  readonly #causes = new Map<string, Cause>();

  /** Creates a limit with its interval and clock. */
  constructor(options: LogLimitOptions = {}) {
    this.#intervalMs = options.intervalMs ?? WARNING_INTERVAL_MS;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Takes one event of `cause`.
   *
   * @returns How many events of the cause were held back since it was last
   * logged (0 for its first) when this one is to be logged; `undefined`
   * when it is held back.
   */
  admit(cause: string): number | undefined {
    const now = this.#now();
    const known = this.#causes.get(cause);
    if (known === undefined) {
      this.#causes.set(cause, { loggedAt: now, held: 0 });
      return 0;
    }
    if (now - known.loggedAt < this.#intervalMs) {
      known.held += 1;
      return undefined;
    }
    const held = known.held;
    known.loggedAt = now;
    known.held = 0;
    return held;
  }

  /**
   * Logs one event at its level when {@linkcode LogLimit.admit} lets it
   * through, and at `debug` when it is held back.
   */
  log(logger: Logger, record: LimitedRecord): void {
    const held = this.admit(record.cause);
    const properties = { ...record.properties, held };
    if (held === undefined) {
      logger.debug(record.message, properties);
      return;
    }
    const tail = held === 0 ? record.first : record.later;
    logger[record.level](`${record.message}; ${tail}`, properties);
  }
}
