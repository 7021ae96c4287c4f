/**
 * The answers the bridges write themselves, in OpenAI's error shape.
 *
 * @module
 */
import type { BudgetResult } from "../core/budget.ts";
import type { BridgeOptions } from "./options.ts";

/**
 * A 400 in OpenAI's shape that makes Hermes and OpenAI-style clients
 * compress and retry: "prompt is too long" / "reduce the length of the
 * messages", code `context_length_exceeded`. It never quotes a context
 * length below the real one, and none of the output-cap phrasings
 * ("requested N output tokens", "available_tokens", "Range of max_tokens")
 * that hosts treat differently.
 */
export function contextLengthExceeded(
  result: BudgetResult,
  options: Pick<BridgeOptions, "window" | "contextLength">,
): Response {
  const message =
    `The prompt is too long: its ${result.promptTokens} tokens leave fewer than ${result.requiredTokens} tokens to generate below the compression window of ${
      result.window ?? options.window
    } tokens (context length ${options.contextLength}). Please reduce the length of the messages.`;
  return Response.json({
    error: {
      message,
      type: "invalid_request_error",
      param: "messages",
      code: "context_length_exceeded",
    },
  }, { status: 400 });
}

/** What {@linkcode errorResponse} answers. */
export interface ErrorAnswer {
  /** The error's `code`, such as `"invalid_json"`. */
  readonly code: string;
  /** A message fit for the client: never prompt text or upstream error text. */
  readonly message: string;
  /**
   * The error's `type`.
   *
   * @default {"invalid_request_error"}
   */
  readonly type?: string;
}

/** An error answer in OpenAI's shape, with a message fit for the client. */
export function errorResponse(status: number, answer: ErrorAnswer): Response {
  const { code, message, type = "invalid_request_error" } = answer;
  return Response.json({ error: { message, type, param: null, code } }, {
    status,
  });
}
