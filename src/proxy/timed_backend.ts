/**
 * A backend wrapped to time its counts for the proxy's tokenizer histogram.
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

/** How a timed count ended: counted, failed, or abandoned by its caller. */
export type CountOutcome = "ok" | "error" | "aborted";

/**
 * Wraps a backend to time its counts (successful or not) for the proxy's
 * tokenizer latency histogram; every hook goes to the wrapped backend. A
 * count its caller aborted (a client that went away) is no tokenizer failure.
 */
export class TimedBackend extends WrappedBackend {
  readonly #observe: (seconds: number, outcome: CountOutcome) => void;

  constructor(
    inner: Backend,
    observe: (seconds: number, outcome: CountOutcome) => void,
  ) {
    super(inner);
    this.#observe = observe;
  }

  override async count(
    request: JsonObject,
    options: CountOptions,
  ): Promise<number | CountResult> {
    const start = performance.now();
    let outcome: CountOutcome = "error";
    try {
      const count = await this.inner.count(request, options);
      outcome = "ok";
      return count;
    } catch (error) {
      if (options.signal?.aborted) outcome = "aborted";
      throw error;
    } finally {
      this.#observe((performance.now() - start) / 1000, outcome);
    }
  }
}
