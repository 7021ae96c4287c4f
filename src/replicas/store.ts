/**
 * The shared store as the proxy uses it: every call under a short deadline,
 * an outage noticed once and logged once, lookups skipped while the store is
 * known to be down, and its health and metrics for the proxy's endpoints.
 * Nothing here throws into a request: a call that fails is a miss.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { errorType } from "../core/error_type.ts";
import { Counter, Histogram } from "../_internal/metrics.ts";
import type { StoreConnection } from "./connection.ts";
import { signRecord, verifiedRecord } from "./record_mac.ts";

const logger = getLogger(["incontext", "shared"]);

/** Options of {@linkcode SharedStore}. */
export interface SharedStoreOptions {
  /** The connection, such as `redisConnection(url)`; the store closes it. */
  readonly connection: StoreConnection;
  /** The deadline of one call, in milliseconds. */
  readonly timeoutMs: number;
  /** How long a record lives, in seconds. */
  readonly ttlSeconds: number;
  /**
   * While the store is down, one lookup is tried this often (and at once
   * when the connection says it is ready again, or an abandoned call is
   * answered after all); the others are skipped. Writes are not skipped.
   * @default 1000
   */
  readonly retryMs?: number;
  /**
   * Calls still waiting for the store's answer (abandoned ones included)
   * beyond which new calls are skipped: the bound of what a hung store holds.
   * @default 256
   */
  readonly maxPending?: number;
  /** The clock of the outage state, in milliseconds. @default Date.now */
  readonly now?: () => number;
  /**
   * A secret the replicas share: every record written is signed with it
   * (an HMAC over its key and value), and a record read whose signature
   * does not hold is ignored and counted (reason `unauthenticated`).
   * Unset, records are trusted as the store holds them.
   */
  readonly secret?: string;
}

/** What {@linkcode SharedStore.status} reports. */
export interface SharedStoreStatus {
  /** `connecting` until the first answer, `up`, or `down` during an outage. */
  readonly state: "connecting" | "up" | "down";
  /** When the outage began (ISO 8601), while down. */
  readonly downSince?: string;
  /** The error type that began it, while down. */
  readonly error?: string;
  /** Calls waiting for the store's answer. */
  readonly pending: number;
  /** The deadline of one call, in milliseconds. */
  readonly timeoutMs: number;
}

/** Why a call brought nothing back, as the errors metric labels it. */
export type FailureReason =
  | "timeout"
  | "error"
  | "unavailable"
  | "busy"
  | "invalid"
  | "unauthenticated";

/** What a call is for, for the metrics' labels: a record kind, or a health probe. */
export type RecordKind = "anchor" | "count" | "probe";

/** The key a health probe reads: no record is ever written there. */
const PROBE_KEY = "incontext:probe";

/** Lookup latency buckets, seconds: from a loopback answer to past a deadline. */
const LOOKUP_BUCKETS: readonly number[] = [
  0.0001,
  0.00025,
  0.0005,
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.1,
];

const TIMEOUT: unique symbol = Symbol("timeout");

/**
 * An error's type, with its system code when it has one (`Error ECONNREFUSED`):
 * a code names the cause without any text of the error's message, which may
 * quote the store's address.
 */
function storeErrorType(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^E[A-Z0-9_]{1,30}$/.test(code)
    ? `${errorType(error)} ${code}`
    : errorType(error);
}

/**
 * A Redis or Valkey store shared by the proxy's replicas, used so that it
 * never takes a replica down: see the module documentation.
 */
export class SharedStore implements AsyncDisposable {
  /** Calls that brought nothing back, by reason. */
  readonly errors: Counter = new Counter(
    "incontext_shared_store_errors_total",
    "Shared-store calls that brought nothing back, by record kind (anchor, count, or probe: a readiness check) and reason: timeout, error, unavailable (skipped during an outage), busy, invalid (a record of another version or shape), unauthenticated (a record whose signature does not hold for INCONTEXT_SHARED_STORE_SECRET).",
  );
  /** Time of lookups, by record kind and outcome. */
  readonly lookups: Histogram = new Histogram(
    "incontext_shared_store_lookup_seconds",
    "Time of shared-store lookups, by record kind and outcome (hit, miss, timeout, error).",
    LOOKUP_BUCKETS,
  );
  readonly #connection: StoreConnection;
  readonly #timeoutMs: number;
  readonly #ttlMs: number;
  readonly #retryMs: number;
  readonly #maxPending: number;
  readonly #now: () => number;
  readonly #secret: string | undefined;
  #state: "connecting" | "up" | "down" = "connecting";
  #downSince = 0;
  #downError = "";
  #retryAt = 0;
  #pending = 0;
  #closed = false;

  /**
   * @param options The connection, the deadline and the records' lifetime.
   * @throws {RangeError} When the deadline or the lifetime is not positive.
   */
  constructor(options: SharedStoreOptions) {
    const { timeoutMs, ttlSeconds } = options;
    if (!(Number.isSafeInteger(timeoutMs) && timeoutMs > 0)) {
      throw new RangeError(
        `Cannot open the shared store as 'timeoutMs' must be a positive integer: current value is ${timeoutMs}`,
      );
    }
    if (!(ttlSeconds > 0)) {
      throw new RangeError(
        `Cannot open the shared store as 'ttlSeconds' must be positive: current value is ${ttlSeconds}`,
      );
    }
    this.#connection = options.connection;
    this.#timeoutMs = timeoutMs;
    this.#ttlMs = Math.ceil(ttlSeconds * 1000);
    this.#retryMs = options.retryMs ?? 1000;
    this.#maxPending = options.maxPending ?? 256;
    this.#now = options.now ?? Date.now;
    this.#secret = options.secret;
    this.#connection.onReady(() => this.#ready());
    this.#connection.onError((error) => this.#failed(storeErrorType(error)));
  }

  /**
   * The stored texts of `keys` (`null` for each missing), or `undefined`
   * when the store did not answer in time or is down.
   */
  async read(
    kind: RecordKind,
    keys: readonly string[],
  ): Promise<(string | null)[] | undefined> {
    const start = performance.now();
    const answer = await this.#call(kind, () => this.#connection.mget(keys));
    const seconds = (performance.now() - start) / 1000;
    if (typeof answer === "string") {
      if (answer === "timeout" || answer === "error") {
        this.lookups.observe(seconds, { kind, outcome: answer });
      }
      return undefined;
    }
    if (!Array.isArray(answer) || answer.length !== keys.length) {
      this.invalid(kind);
      return undefined;
    }
    const texts = answer.map((value, i) =>
      typeof value === "string" ? this.#verified(kind, keys[i]!, value) : null
    );
    const hit = texts.some((value) => value !== null);
    this.lookups.observe(seconds, { kind, outcome: hit ? "hit" : "miss" });
    return texts;
  }

  /** A stored text as its record, or null (counted) when its signature fails. */
  #verified(kind: RecordKind, key: string, text: string): string | null {
    if (this.#secret === undefined) return text;
    const value = verifiedRecord(this.#secret, key, text);
    if (value !== undefined) return value;
    this.errors.inc({ kind, reason: "unauthenticated" });
    return null;
  }

  /**
   * Writes `value` under `key` with the records' lifetime; returns at once.
   * A write goes out even while the store is down: no request waits for it,
   * and a record not written is one the other replicas never find.
   */
  write(kind: RecordKind, key: string, value: string): void {
    const text = this.#secret === undefined
      ? value
      : signRecord(this.#secret, key, value);
    void this.#call(
      kind,
      () => this.#connection.set(key, text, this.#ttlMs),
      "write",
    );
  }

  /** Counts a record that was not of this version or shape. */
  invalid(kind: RecordKind): void {
    this.errors.inc({ kind, reason: "invalid" });
  }

  /**
   * Asks the store once when it is known to be down (at most once per
   * retry interval, as any call), so that its status follows a recovery
   * with no traffic to notice it.
   */
  async refresh(): Promise<void> {
    if (this.#state !== "down" || this.#closed) return;
    await this.#call("probe", () => this.#connection.mget([PROBE_KEY]));
  }

  /** The store's state, for the proxy's health endpoint. */
  status(): SharedStoreStatus {
    return {
      state: this.#state,
      ...(this.#state === "down"
        ? {
          downSince: new Date(this.#downSince).toISOString(),
          error: this.#downError,
        }
        : {}),
      pending: this.#pending,
      timeoutMs: this.#timeoutMs,
    };
  }

  /** The store's metric families, in the exposition format. */
  metricLines(): string[] {
    return [...this.errors.render(), ...this.lookups.render()];
  }

  /** Closes the connection; calls after it are skipped. */
  async [Symbol.asyncDispose](): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#connection.close();
  }

  /** Runs `run` under the deadline: its value, or why there is none. */
  async #call<T>(
    kind: RecordKind,
    run: () => Promise<T>,
    use: "read" | "write" = "read",
  ): Promise<T | FailureReason> {
    const skipped = this.#skip(use);
    if (skipped !== undefined) {
      this.errors.inc({ kind, reason: skipped });
      return skipped;
    }
    this.#pending++;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const running = (async () => await run())().finally(() => this.#pending--);
    const started = performance.now();
    const late = new Promise<typeof TIMEOUT>((resolve) => {
      timer = setTimeout(() => {
        // A timer runs before the loop reads what its sockets received, so
        // a replica whose thread was held past the deadline (code compiled
        // on a first request, a long conversation hashed, a busy machine)
        // would find the timer due and the answer unread though the store
        // answered in time. The loop gets one more turn to read it, and a
        // thread held for more than a second deadline gets one more
        // deadline: reading a socket's answer can take a few turns. Only a
        // store that has not answered by then is late.
        const held = performance.now() - started > 2 * this.#timeoutMs;
        timer = setTimeout(
          () => resolve(TIMEOUT),
          held ? this.#timeoutMs : 0,
        );
      }, this.#timeoutMs);
    });
    try {
      const value = await Promise.race([running, late]);
      if (value === TIMEOUT) {
        // The answer may still come: it is dropped, and its error too, but
        // it says the store answers, only slowly.
        running.then(() => this.#answeredLate(), () => {});
        this.#fail(kind, "timeout", "TimeoutError", use);
        return "timeout";
      }
      this.#answered();
      return value;
    } catch (error) {
      this.#fail(kind, "error", storeErrorType(error), use);
      return "error";
    } finally {
      clearTimeout(timer);
    }
  }

  /** Why a call must not go to the store now, or undefined when it may. */
  #skip(use: "read" | "write"): FailureReason | undefined {
    if (this.#closed || this.#state === "connecting") return "unavailable";
    if (this.#pending >= this.#maxPending) return "busy";
    if (this.#state === "down" && use === "read") {
      const now = this.#now();
      if (now < this.#retryAt) return "unavailable";
      // One call tries the store; the others wait for the next retry.
      this.#retryAt = now + this.#retryMs;
    }
    return undefined;
  }

  #fail(
    kind: RecordKind,
    reason: "timeout" | "error",
    type: string,
    use: "read" | "write",
  ): void {
    this.errors.inc({ kind, reason });
    // Writes go out during an outage; their failures do not put off the
    // lookup that tries the store again.
    if (use === "write" && this.#state === "down") return;
    this.#failed(type);
  }

  /** The store failed: the outage begins, logged once. */
  #failed(type: string): void {
    if (this.#closed) return;
    const now = this.#now();
    if (this.#state !== "down") {
      this.#state = "down";
      this.#downSince = now;
      this.#downError = type;
      logger.warn(
        "shared store unavailable ({error}): each replica works from its own anchors and counts until it answers",
        { error: type },
      );
    }
    this.#retryAt = Math.max(this.#retryAt, now + this.#retryMs);
  }

  /** The connection is ready: the next call may try the store at once. */
  #ready(): void {
    if (this.#state === "connecting") {
      this.#state = "up";
      logger.info("shared store connected");
      return;
    }
    this.#retryAt = 0;
  }

  /**
   * A call abandoned at its deadline was answered after it: the store is
   * slow, not gone, so the next lookup may try it at once rather than a
   * retry interval later.
   */
  #answeredLate(): void {
    if (this.#state === "down") this.#retryAt = 0;
  }

  /** A call was answered: an outage is over. */
  #answered(): void {
    if (this.#state === "up") return;
    if (this.#state === "down") {
      logger.info("shared store answers again after {seconds} s", {
        seconds: Math.round((this.#now() - this.#downSince) / 100) / 10,
      });
    }
    this.#state = "up";
  }
}
