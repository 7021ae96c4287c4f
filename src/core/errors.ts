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

/**
 * The request breaks a rule of the served chat template (it calls
 * `raise_exception`, e.g. "Conversation roles must alternate"), so the
 * server would reject it too. budget() leaves such a request unchanged
 * instead of estimating it.
 *
 * @example Telling a rejected request from a failed count
 * ```ts
 * import { CountError, TemplateRejectedError } from "@incontext/incontext/local";
 * import { ok } from "node:assert/strict";
 *
 * const error = new TemplateRejectedError();
 * ok(error instanceof CountError);
 * ok(error.message.includes("the server would too"));
 * ```
 */
export class TemplateRejectedError extends CountError {
  /**
   * Creates the error. The template's own message is not copied: it may
   * quote the prompt.
   *
   * @param options The underlying cause, if any.
   */
  constructor(options?: ErrorOptions) {
    super(
      "the chat template rejects this request (the server would too)",
      options,
    );
    this.name = "TemplateRejectedError";
  }
}
