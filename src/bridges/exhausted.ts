/**
 * The signal that a conversation must be compressed before it goes on: the
 * overflow answer the bridges and the proxy give, as each SDK surfaces it,
 * and {@linkcode ContextWindowExhaustedError} for the library's own paths.
 *
 * @example Compressing when a call fails because the window is full
 * ```ts
 * import {
 *   ContextWindowExhaustedError,
 *   isContextWindowExhausted,
 * } from "@incontext/incontext/exhausted";
 * import { strictEqual } from "node:assert/strict";
 *
 * const error = new ContextWindowExhaustedError({
 *   promptTokens: 53000,
 *   contextLength: 65536,
 *   window: 55705,
 *   requiredTokens: 4096,
 *   availableTokens: 2705,
 *   fitsContext: true,
 * });
 * strictEqual(isContextWindowExhausted(error), true);
 * strictEqual(isContextWindowExhausted(new Error("connection reset")), false);
 * ```
 *
 * @module
 */

import {
  CONTEXT_LENGTH_EXCEEDED,
  type ContextWindowExhaustion,
  exhaustionMessage,
} from "./exhaustion.ts";

export type { ContextWindowExhaustion } from "./exhaustion.ts";

/**
 * Thrown where the library itself finds the window exhausted: a bridge that
 * would otherwise call the model with a prompt that leaves too little room.
 * Its `code` is the overflow answer's, `"context_length_exceeded"`, so code
 * that reads `error.code` treats both alike; its message holds counts only.
 *
 * @example Reading the counts
 * ```ts
 * import { ContextWindowExhaustedError } from "@incontext/incontext/exhausted";
 * import { strictEqual } from "node:assert/strict";
 *
 * const error = new ContextWindowExhaustedError({
 *   promptTokens: 65000,
 *   contextLength: 65536,
 *   window: 55705,
 *   requiredTokens: 4096,
 *   availableTokens: 536,
 *   fitsContext: false,
 * });
 * strictEqual(error.code, "context_length_exceeded");
 * strictEqual(error.promptTokens, 65000);
 * ```
 */
export class ContextWindowExhaustedError extends Error {
  /** Always `"context_length_exceeded"`. */
  readonly code: "context_length_exceeded" = CONTEXT_LENGTH_EXCEEDED;
  /** P: the prompt tokens counted (or estimated). */
  readonly promptTokens: number;
  /** C: the served context length. */
  readonly contextLength: number;
  /** W: the compression window. */
  readonly window: number;
  /** The smallest reply worth sending: min(caller's cap, R). */
  readonly requiredTokens: number;
  /** What is left for the reply (below W, or below C when the prompt does not fit it). */
  readonly availableTokens: number;
  /** True when only the window is full, not the context length. */
  readonly fitsContext: boolean;

  /**
   * Creates the error.
   *
   * @param exhaustion The counts.
   * @param options The underlying cause, if any.
   */
  constructor(exhaustion: ContextWindowExhaustion, options?: ErrorOptions) {
    super(exhaustionMessage(exhaustion), options);
    this.name = "ContextWindowExhaustedError";
    this.promptTokens = exhaustion.promptTokens;
    this.contextLength = exhaustion.contextLength;
    this.window = exhaustion.window;
    this.requiredTokens = exhaustion.requiredTokens;
    this.availableTokens = Math.max(0, exhaustion.availableTokens);
    this.fitsContext = exhaustion.fitsContext;
  }
}

/** How deep a chain of causes is followed. */
const MAX_DEPTH = 8;

/**
 * Whether an error says the conversation no longer fits: the overflow
 * answer of the proxy, `budgetedFetch` or `budgetMiddleware` (or OpenAI's
 * own) as each SDK surfaces it, or a {@linkcode ContextWindowExhaustedError}.
 * It recognises the `openai` SDK's `APIError` (`code`, also under the OpenAI
 * Agents SDK), the AI SDK's `APICallError` (`data.error.code`, else its
 * `responseBody`) and its `RetryError`, and LangChain.js's
 * `ContextOverflowError`, following `cause` chains. It never throws.
 *
 * @param error What a call threw (or a stream reported).
 * @returns True when the host should compress and try again.
 *
 * @example With the openai SDK's error shape
 * ```ts
 * import { isContextWindowExhausted } from "@incontext/incontext/exhausted";
 * import { strictEqual } from "node:assert/strict";
 *
 * // What openai's BadRequestError carries for the overflow answer.
 * const error = Object.assign(new Error("400 This model's maximum context length is ..."), {
 *   status: 400,
 *   code: "context_length_exceeded",
 * });
 * strictEqual(isContextWindowExhausted(error), true);
 * ```
 */
export function isContextWindowExhausted(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < MAX_DEPTH; depth++) {
    if (typeof current !== "object" || current === null) return false;
    try {
      if (recognised(current as Record<string, unknown>)) return true;
      current = inner(current as Record<string, unknown>);
    } catch {
      // A getter that throws is not an overflow.
      return false;
    }
  }
  return false;
}

/** Whether this one error (not its causes) is the overflow. */
function recognised(error: Record<string, unknown>): boolean {
  const { name } = error;
  if (
    name === "ContextWindowExhaustedError" ||
    // LangChain.js raises it for the overflow answers it recognises.
    name === "ContextOverflowError"
  ) {
    return true;
  }
  return error.code === CONTEXT_LENGTH_EXCEEDED ||
    bodyCode(error.error) ||
    bodyCode(field(error.data, "error")) ||
    responseBodyCode(error.responseBody);
}

/** The error an error wraps: its `cause`, or the AI SDK RetryError's last. */
function inner(error: Record<string, unknown>): unknown {
  return error.cause ?? error.lastError;
}

function bodyCode(value: unknown): boolean {
  return field(value, "code") === CONTEXT_LENGTH_EXCEEDED;
}

function field(value: unknown, name: string): unknown {
  return typeof value === "object" && value !== null
    ? (value as Record<string, unknown>)[name]
    : undefined;
}

/** The AI SDK keeps the raw body when its error schema did not parse it. */
function responseBodyCode(body: unknown): boolean {
  if (typeof body !== "string" || !body.includes(CONTEXT_LENGTH_EXCEEDED)) {
    return false;
  }
  try {
    return bodyCode(field(JSON.parse(body), "error"));
  } catch {
    return false;
  }
}
