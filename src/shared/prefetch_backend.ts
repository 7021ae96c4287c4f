/**
 * A backend that brings a chat request's usage anchor from the shared store
 * into the local layer around its count, so that every synchronous reader
 * of the anchors (the anchored backend's count, the anchor fallback, the
 * proxy's cross-check) finds what another replica recorded.
 *
 * @module
 */
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
import type { SharedAnchorStore } from "./shared_anchors.ts";

/** Options of {@linkcode PrefetchingBackend}. */
export interface PrefetchingOptions {
  /** The anchors to fill. */
  readonly anchors: SharedAnchorStore;
  /**
   * Whether the backend reads the anchors itself (the anchored backend): the
   * anchor is then fetched before the count; otherwise beside it, so an
   * exact count waits for nothing but itself.
   */
  readonly anchorsFirst: boolean;
}

/** Wraps a backend with the shared anchors' prefetch; every hook goes to it. */
export class PrefetchingBackend extends Backend {
  readonly #inner: Backend;
  readonly #anchors: SharedAnchorStore;
  readonly #first: boolean;

  constructor(inner: Backend, options: PrefetchingOptions) {
    super();
    this.#inner = inner;
    this.#anchors = options.anchors;
    this.#first = options.anchorsFirst;
  }

  /** The wrapped backend. */
  get inner(): Backend {
    return this.#inner;
  }

  get source(): string {
    return this.#inner.source;
  }

  override async count(
    request: JsonObject,
    options: CountOptions,
  ): Promise<number | CountResult> {
    if ((options.kind ?? "chat") !== "chat") {
      return await this.#inner.count(request, options);
    }
    const prefetch = this.#anchors.prefetch(request);
    if (this.#first) {
      await prefetch;
      return await this.#inner.count(request, options);
    }
    try {
      return await this.#inner.count(request, options);
    } finally {
      // The fallback and the cross-check read the anchor after the count.
      await prefetch;
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
