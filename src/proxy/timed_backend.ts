import {
  Backend,
  type CapField,
  type CapReading,
  type CountOptions,
  type CountResult,
  type JsonObject,
  type OutputFieldOptions,
  type OutputLimitOptions,
  type ReadCapsOptions,
  type RequestKind,
} from "../core/backend.ts";

/** How a timed count ended: counted, failed, or abandoned by its caller. */
export type CountOutcome = "ok" | "error" | "aborted";

/**
 * Wraps a backend to time its counts (successful or not) for the proxy's
 * tokenizer latency histogram; every hook goes to the wrapped backend. A
 * count its caller aborted (a client that went away) is no tokenizer failure.
 */
export class TimedBackend extends Backend {
  readonly #inner: Backend;
  readonly #observe: (seconds: number, outcome: CountOutcome) => void;

  constructor(
    inner: Backend,
    observe: (seconds: number, outcome: CountOutcome) => void,
  ) {
    super();
    this.#inner = inner;
    this.#observe = observe;
  }

  get source(): string {
    return this.#inner.source;
  }

  override async count(
    request: JsonObject,
    options: CountOptions,
  ): Promise<number | CountResult> {
    const start = performance.now();
    let outcome: CountOutcome = "error";
    try {
      const count = await this.#inner.count(request, options);
      outcome = "ok";
      return count;
    } catch (error) {
      if (options.signal?.aborted) outcome = "aborted";
      throw error;
    } finally {
      this.#observe((performance.now() - start) / 1000, outcome);
    }
  }

  override clearCache(): Promise<void> {
    return this.#inner.clearCache();
  }

  override outputBudgetField(
    field: CapField,
    options?: OutputFieldOptions,
  ): string {
    return this.#inner.outputBudgetField(field, options);
  }

  override coerceOutputBudget(value: unknown): number | undefined {
    return this.#inner.coerceOutputBudget(value);
  }

  override outputBudgetLimit(
    request: JsonObject,
    options: OutputLimitOptions,
  ): number | undefined {
    return this.#inner.outputBudgetLimit(request, options);
  }

  override requestKind(request: JsonObject): RequestKind | undefined {
    return this.#inner.requestKind(request);
  }

  override readCaps(request: JsonObject, options: ReadCapsOptions): CapReading {
    return this.#inner.readCaps(request, options);
  }

  override writeCap(
    request: JsonObject,
    field: string,
    value: number,
  ): JsonObject {
    return this.#inner.writeCap(request, field, value);
  }
}
