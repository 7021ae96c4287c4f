/**
 * `FakeBackend`, the in-memory backend of unit tests.
 *
 * @module
 */
import {
  Backend,
  type CountOptions,
  type CountResult,
  type JsonObject,
  type OutputLimitOptions,
} from "../core/backend.ts";

/** Options for {@linkcode FakeBackend}. */
export interface FakeBackendOptions {
  /**
   * The count to return (a number, or a {@linkcode CountResult} with an
   * estimated part), or a function of the request.
   *
   * @default 0
   */
  readonly count?:
    | number
    | CountResult
    | ((
      request: JsonObject,
    ) => number | CountResult | Promise<number | CountResult>);
  /** When set, every count rejects with this error. */
  readonly error?: Error;
  /**
   * The source label.
   *
   * @default "fake"
   */
  readonly source?: string;
  /** What `outputBudgetLimit` returns. */
  readonly outputLimit?: number;
}

/**
 * An in-memory backend for unit tests: returns a fixed or computed count (or
 * fails), and records every request it was asked to count.
 *
 * @example Counting and failing on demand
 * ```ts
 * import { FakeBackend } from "@incontext/incontext/testing";
 * import { rejects, strictEqual } from "node:assert/strict";
 *
 * const backend = new FakeBackend({ count: 12 });
 * strictEqual(await backend.count({ messages: [] }, { contextLength: 8192 }), 12);
 * strictEqual(backend.calls.length, 1);
 * await rejects(new FakeBackend({ error: new Error("down") }).count({}, { contextLength: 1 }));
 * ```
 */
export class FakeBackend extends Backend {
  /** The source label. */
  readonly source: string;
  /** Every request counted, in order. */
  readonly calls: JsonObject[] = [];
  #options: FakeBackendOptions;

  /**
   * Creates a fake backend.
   *
   * @param options The count, error, source and output limit.
   */
  constructor(options: FakeBackendOptions = {}) {
    super();
    this.#options = options;
    this.source = options.source ?? "fake";
  }

  /**
   * Returns the configured count, or rejects with the configured error.
   *
   * @param request The request, recorded.
   * @param options Aborting rejects the count.
   * @returns The configured count.
   * @throws The configured `error`, or the signal's reason once aborted.
   *
   * @example A count computed from the request
   * ```ts
   * import { FakeBackend } from "@incontext/incontext/testing";
   * import { deepStrictEqual, strictEqual } from "node:assert/strict";
   *
   * const backend = new FakeBackend({ count: (request) => JSON.stringify(request).length });
   * strictEqual(await backend.count({ messages: [] }, { contextLength: 8192 }), 15);
   * deepStrictEqual(backend.calls, [{ messages: [] }]);
   * ```
   */
  override async count(
    request: JsonObject,
    options: CountOptions,
  ): Promise<number | CountResult> {
    this.calls.push(request);
    options.signal?.throwIfAborted();
    if (this.#options.error) throw this.#options.error;
    const { count = 0 } = this.#options;
    return typeof count === "function" ? await count(request) : count;
  }

  /**
   * Returns the configured output limit.
   *
   * @param _request Ignored.
   * @param _options Ignored.
   * @returns The configured limit, or undefined.
   *
   * @example Budgeting against a server's own limit
   * ```ts
   * import { budget } from "@incontext/incontext";
   * import { FakeBackend } from "@incontext/incontext/testing";
   * import { strictEqual } from "node:assert/strict";
   *
   * const backend = new FakeBackend({ count: 100, outputLimit: 6000 });
   * strictEqual(backend.outputBudgetLimit({}, { contextLength: 8192 }), 6000);
   * const result = await budget({ messages: [] }, { window: 8000, contextLength: 8192, backend });
   * strictEqual(result.request.max_tokens, 6000);
   * ```
   */
  override outputBudgetLimit(
    _request: JsonObject,
    _options: OutputLimitOptions,
  ): number | undefined {
    return this.#options.outputLimit;
  }
}
