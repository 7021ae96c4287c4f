/**
 * `CountError` and the errors that narrow it: what a caller of budget() or of
 * a backend may catch.
 *
 * @module
 */

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
 * import { CountError, TemplateRejectedError } from "@incontext/incontext";
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

/**
 * The chat template uses a construct the local renderer cannot render as
 * jinja2 would, so the count fails (and budget() falls back to an
 * estimate) rather than count another text. The construct is named in
 * template terms (syntax and value types, never request content), so the
 * message is safe to log; counting backends log it once per construct.
 *
 * @example The construct is part of the message
 * ```ts
 * import { UnsupportedTemplateError } from "./errors.ts";
 * import { strictEqual } from "node:assert/strict";
 *
 * const error = new UnsupportedTemplateError("the filter 'wordwrap'");
 * strictEqual(error.construct, "the filter 'wordwrap'");
 * ```
 */
export class UnsupportedTemplateError extends CountError {
  /** The construct. */
  readonly construct: string;
  /**
   * Creates the error.
   *
   * @param construct What the template uses that is not supported.
   * @param options The underlying cause, if any.
   */
  constructor(construct: string, options?: ErrorOptions) {
    super(
      `The chat template uses ${construct}, which the local renderer does not support`,
      options,
    );
    this.name = "UnsupportedTemplateError";
    this.construct = construct;
  }

  /**
   * Rebuilds the error from its message (as it crossed a worker's port).
   *
   * @param message The message of an `UnsupportedTemplateError`.
   * @returns The error, or a plain CountError for another message.
   */
  static fromMessage(message: string): CountError {
    const match =
      /^The chat template uses (.*), which the local renderer does not support$/s
        .exec(message);
    return match === null
      ? new CountError(message)
      : new UnsupportedTemplateError(match[1]!);
  }
}

/**
 * The server reports another context length than the configured one (vLLM's
 * `max_model_len`, TGI's `max_total_tokens`, llama.cpp's `n_ctx`): every
 * budget computed against the configured one would be wrong, so the count
 * fails. Both numbers and both names are carried for the message a user acts on.
 *
 * @example Reading both sides
 * ```ts
 * import { ContextLengthMismatchError } from "@incontext/incontext";
 * import { strictEqual } from "node:assert/strict";
 *
 * const error = new ContextLengthMismatchError({ servedBy: "vLLM max_model_len", served: 32768, configured: 65536 });
 * strictEqual(error.message, "vLLM max_model_len does not match the configured context length: 32768 != 65536");
 * ```
 */
export class ContextLengthMismatchError extends CountError {
  /** What reported `served`, such as `"vLLM max_model_len"`. */
  readonly servedBy: string;
  /** The server's own context length. */
  readonly served: number;
  /** The configured context length. */
  readonly configured: number;
  /**
   * Creates the error.
   *
   * @param mismatch Both context lengths and the server's name for its own.
   */
  constructor(
    mismatch: {
      readonly servedBy: string;
      readonly served: number;
      readonly configured: number;
    },
  ) {
    super(
      `${mismatch.servedBy} does not match the configured context length: ${mismatch.served} != ${mismatch.configured}`,
    );
    this.name = "ContextLengthMismatchError";
    this.servedBy = mismatch.servedBy;
    this.served = mismatch.served;
    this.configured = mismatch.configured;
  }
}

/**
 * The counting engine's error (`@incontext/engine`) as the CountError a
 * caller catches, told by its name so that it holds the same once it has
 * crossed a worker's port: `RequestRejectedError` is a
 * TemplateRejectedError, `UnsupportedConstructError` an
 * UnsupportedTemplateError, `EngineError` a CountError with its message.
 * Any other value is returned as it is.
 *
 * @param error What a call into the engine threw.
 * @returns The CountError, or `error` itself.
 */
export function countErrorOf(error: unknown): unknown {
  if (!(error instanceof Error) || error instanceof CountError) return error;
  const options = error.cause === undefined ? {} : { cause: error.cause };
  switch (error.name) {
    case "EngineError":
      return new CountError(error.message, options);
    case "RequestRejectedError":
      return new TemplateRejectedError(options);
    case "UnsupportedConstructError":
      return UnsupportedTemplateError.fromMessage(error.message);
    default:
      return error;
  }
}
