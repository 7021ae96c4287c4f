/**
 * A backend that brings a chat request's usage anchor from the shared store
 * into the local layer around its count, so that every synchronous reader
 * of the anchors (the anchored backend's count, the anchor fallback, the
 * proxy's cross-check) finds what another replica recorded.
 *
 * @module
 */
import type {
  Backend,
  CountOptions,
  CountResult,
  JsonObject,
} from "../core/backend.ts";
import { WrappedBackend } from "../core/wrapped_backend.ts";
import type { SharedAnchorStore } from "./anchors.ts";

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
export class PrefetchingBackend extends WrappedBackend {
  readonly #anchors: SharedAnchorStore;
  readonly #first: boolean;

  constructor(inner: Backend, options: PrefetchingOptions) {
    super(inner);
    this.#anchors = options.anchors;
    this.#first = options.anchorsFirst;
  }

  override async count(
    request: JsonObject,
    options: CountOptions,
  ): Promise<number | CountResult> {
    if ((options.kind ?? "chat") !== "chat") {
      return await this.inner.count(request, options);
    }
    const prefetch = this.#anchors.prefetch(request);
    if (this.#first) {
      await prefetch;
      return await this.inner.count(request, options);
    }
    try {
      return await this.inner.count(request, options);
    } finally {
      // The fallback and the cross-check read the anchor after the count.
      await prefetch;
    }
  }
}
