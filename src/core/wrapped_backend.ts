/**
 * A backend around another: every hook goes to the wrapped one, and a
 * subclass changes only what it adds around `count()` (timing it, fetching
 * what it reads first).
 *
 * @module
 */
import {
  Backend,
  type CapField,
  type CapReading,
  type CountCheck,
  type CountOptions,
  type CountResult,
  type JsonObject,
  type OutputFieldOptions,
  type OutputLimitOptions,
  type ReadCapsOptions,
  type RequestKind,
} from "./backend.ts";

/** Hands every hook of {@linkcode Backend} to the wrapped backend. */
export abstract class WrappedBackend extends Backend {
  /** The wrapped backend. */
  readonly inner: Backend;

  /** @param inner The backend every hook goes to. */
  constructor(inner: Backend) {
    super();
    this.inner = inner;
  }

  get source(): string {
    return this.inner.source;
  }

  override get servedContext(): string | undefined {
    return this.inner.servedContext;
  }

  override count(
    request: JsonObject,
    options: CountOptions,
  ): Promise<number | CountResult> {
    return this.inner.count(request, options);
  }

  override clearCache(): Promise<void> {
    return this.inner.clearCache();
  }

  override countChecked(check: CountCheck): void {
    this.inner.countChecked(check);
  }

  override estimateReason(model: string | undefined): string | undefined {
    return this.inner.estimateReason(model);
  }

  override outputBudgetField(
    field: CapField,
    options?: OutputFieldOptions,
  ): string {
    return this.inner.outputBudgetField(field, options);
  }

  override coerceOutputBudget(value: unknown): number | undefined {
    return this.inner.coerceOutputBudget(value);
  }

  override outputBudgetLimit(
    request: JsonObject,
    options: OutputLimitOptions,
  ): number | undefined {
    return this.inner.outputBudgetLimit(request, options);
  }

  override requestKind(request: JsonObject): RequestKind | undefined {
    return this.inner.requestKind(request);
  }

  override readCaps(request: JsonObject, options: ReadCapsOptions): CapReading {
    return this.inner.readCaps(request, options);
  }

  override writeCap(
    request: JsonObject,
    field: string,
    value: number,
  ): JsonObject {
    return this.inner.writeCap(request, field, value);
  }
}
