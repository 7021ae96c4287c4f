/**
 * The proxy's last readiness probe: concurrent readiness checks share one
 * probe, and a probe recorded elsewhere (a server's start-up probe) answers
 * while it is fresh.
 */

/** What a readiness probe found of the tokenizer. */
export type TokenizerReadiness =
  /** It counted exactly. */
  | "reachable"
  /** It counted by estimate, as a backend without a count endpoint does. */
  | "estimating"
  /** It answered with another context length than the configured one. */
  | "context_length_mismatch"
  /** It did not count. */
  | "unreachable";

/** What one readiness probe found. */
export interface ReadinessProbe {
  /** Whether the tokenizer counted, and how. */
  readonly tokenizer: TokenizerReadiness;
  /** Whether the upstream answered `GET /v1/models` below 500. */
  readonly upstream: "reachable" | "unreachable";
  /** When the probe ended, in milliseconds since the epoch. */
  readonly checkedAt: number;
}

/** How long a result that is not ready answers readiness at most, in ms. */
const FAILED_MAX_AGE_MS = 1000;

/** Options for {@linkcode Readiness}. */
export interface ReadinessOptions {
  /**
   * How long a probe's result answers readiness before the next check
   * probes again, in seconds; 0 probes at every check. A result that is
   * not ready answers for at most a second, so that a recovery shows at
   * the next check.
   *
   * @default 0
   */
  readonly maxAgeSeconds?: number;
  /**
   * The clock, in milliseconds since the epoch.
   *
   * @default Date.now
   */
  readonly now?: () => number;
}

/**
 * The proxy's last readiness probe. `incontext serve` records its start-up
 * probe here, so that `/incontext/readyz` reports it until it is stale; a
 * stale or missing result is probed again, once for concurrent requests.
 *
 * @example Recording a start-up probe
 * ```ts
 * import { Readiness } from "@incontext/incontext/proxy";
 * import { strictEqual } from "node:assert/strict";
 *
 * const readiness = new Readiness({ now: () => 1000 });
 * readiness.record({ tokenizer: "unreachable", upstream: "reachable" });
 * strictEqual(readiness.last()?.checkedAt, 1000);
 * ```
 */
export class Readiness {
  readonly #maxAgeMs: number;
  readonly #now: () => number;
  #last: ReadinessProbe | undefined;
  #running: Promise<ReadinessProbe> | undefined;

  /**
   * Creates an empty readiness: the first check probes.
   *
   * @param options The freshness of a probe and the clock.
   * @throws {RangeError} When `maxAgeSeconds` is negative or not a number.
   */
  constructor(options: ReadinessOptions = {}) {
    const { maxAgeSeconds = 0, now = Date.now } = options;
    if (!(maxAgeSeconds >= 0 && Number.isFinite(maxAgeSeconds))) {
      throw new RangeError(
        `Cannot create the readiness as 'maxAgeSeconds' must be a non-negative number: current value is ${maxAgeSeconds}`,
      );
    }
    this.#maxAgeMs = maxAgeSeconds * 1000;
    this.#now = now;
  }

  /**
   * Records what a probe found, timed now.
   *
   * @param found The tokenizer's and the upstream's state.
   */
  record(found: Omit<ReadinessProbe, "checkedAt">): void {
    this.#last = { ...found, checkedAt: this.#now() };
  }

  /**
   * The last probe's result, if any.
   *
   * @returns The result, or undefined before the first probe.
   */
  last(): ReadinessProbe | undefined {
    return this.#last;
  }

  /**
   * The last result while it is fresh; else runs `probe` (one run at a time)
   * and records its result.
   *
   * @param probe Probes the tokenizer and the upstream.
   * @returns A fresh result.
   */
  current(
    probe: () => Promise<Omit<ReadinessProbe, "checkedAt">>,
  ): Promise<ReadinessProbe> {
    const last = this.#last;
    const maxAgeMs = last === undefined || isReady(last)
      ? this.#maxAgeMs
      : Math.min(this.#maxAgeMs, FAILED_MAX_AGE_MS);
    if (
      last !== undefined && this.#running === undefined &&
      this.#now() - last.checkedAt < maxAgeMs
    ) {
      return Promise.resolve(last);
    }
    this.#running ??= probe().then((found) => {
      this.record(found);
      return this.#last!;
    }).finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }
}

/** Whether a probe's result means the proxy is ready to serve. */
export function isReady(probe: ReadinessProbe): boolean {
  return (probe.tokenizer === "reachable" ||
    probe.tokenizer === "estimating") && probe.upstream === "reachable";
}
