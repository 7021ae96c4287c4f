/**
 * A backend could not count a request exactly. Its message names the rule
 * that failed and never holds prompt text, URLs, credentials or raw server
 * error text, so it is safe to log.
 *
 * @example Throwing from a backend
 * ```ts
 * import { CountError } from "@incontext/incontext";
 * import { strictEqual } from "node:assert/strict";
 *
 * const error = new CountError("vLLM /tokenize returned an invalid count");
 * strictEqual(error.name, "CountError");
 * ```
 */
export class CountError extends Error {
  /**
   * Creates a count error.
   *
   * @param message What failed, without sensitive text.
   * @param options The underlying cause, if any.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "CountError";
  }
}
