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

/**
 * Wraps a backend to time its counts (successful or not) for the proxy's
 * tokenizer latency histogram; every hook goes to the wrapped backend.
 */
export class TimedBackend extends Backend {
  readonly #inner: Backend;
  readonly #observe: (seconds: number, ok: boolean) => void;

  constructor(inner: Backend, observe: (seconds: number, ok: boolean) => void) {
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
    let ok = false;
    try {
      const count = await this.#inner.count(request, options);
      ok = true;
      return count;
    } finally {
      this.#observe((performance.now() - start) / 1000, ok);
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
