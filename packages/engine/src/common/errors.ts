/**
 * What the engine fails with. Every message names the rule or the construct
 * that failed and never holds prompt text, file contents or paths a user did
 * not give, so it is safe to log. A host maps them onto its own errors.
 *
 * @module
 */

/**
 * The engine could not render, tokenize or count a request exactly, or could
 * not load a model folder.
 *
 * @example Telling the engine's errors apart
 * ```ts
 * import { EngineError, RequestRejectedError } from "@incontext/engine";
 * import { ok } from "node:assert/strict";
 *
 * ok(new RequestRejectedError() instanceof EngineError);
 * ```
 */
export class EngineError extends Error {
  /**
   * Creates the error.
   *
   * @param message What failed, without sensitive text.
   * @param options The underlying cause, if any.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "EngineError";
  }
}

/**
 * The request breaks a rule of the served chat template (it calls
 * `raise_exception`) or of vLLM's preprocessing (an empty conversation,
 * tool-call arguments that are not JSON): the server would reject it too.
 */
export class RequestRejectedError extends EngineError {
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
    this.name = "RequestRejectedError";
  }
}

/**
 * The chat template uses a construct the renderer cannot render as jinja2
 * would: the count fails rather than count another text. The construct is
 * named in template terms (syntax and value types, never request content).
 */
export class UnsupportedConstructError extends EngineError {
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
    this.name = "UnsupportedConstructError";
    this.construct = construct;
  }
}

/** The name of `error`'s type, or of the kind of value thrown. */
export function errorType(error: unknown): string {
  if (error instanceof Error) return error.name;
  return error === null ? "null" : error === undefined ? "none" : typeof error;
}

/**
 * The cause to chain to an EngineError: only the original error's type.
 * Template, file and parser errors can echo the prompt, so their messages
 * never travel on.
 */
export function safeCause(error: unknown): Error {
  const cause = new Error(`${errorType(error)} (details withheld)`);
  cause.name = errorType(error);
  return cause;
}

/**
 * `error` itself when it is an EngineError (its message holds no prompt
 * text), else an EngineError saying `what` failed, with the original's type
 * only.
 */
export function asEngineError(error: unknown, what: string): EngineError {
  return error instanceof EngineError
    ? error
    : new EngineError(`${what}: ${errorType(error)}`, {
      cause: safeCause(error),
    });
}
