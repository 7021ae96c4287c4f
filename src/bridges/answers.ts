/**
 * The answers the bridges write themselves, in OpenAI's error shape.
 *
 * @module
 */
import type { BudgetResult } from "../core/budget.ts";
import type { BridgeOptions } from "./options.ts";
import {
  CONTEXT_LENGTH_EXCEEDED,
  type ContextWindowExhaustion,
  exhaustionMessage,
} from "./exhaustion.ts";

/**
 * The counts of a "compress" result that no policy sends: the window is
 * full (`reject`), or the context length no longer holds the smallest reply
 * worth sending (every policy but `unchanged`).
 */
export function exhaustionOf(
  result: BudgetResult,
  options: Pick<BridgeOptions, "window" | "contextLength">,
): ContextWindowExhaustion {
  const required = result.requiredTokens ?? 0;
  const hard = result.hardLimitTokens ?? 0;
  const fitsContext = hard >= required;
  return {
    promptTokens: result.promptTokens ?? 0,
    contextLength: options.contextLength,
    window: result.window ?? options.window,
    requiredTokens: required,
    availableTokens: Math.max(0, fitsContext ? result.maxTokens ?? 0 : hard),
    fitsContext,
    estimated: (result.estimatedTokens ?? 0) > 0,
  };
}

/**
 * The overflow 400 in OpenAI's shape, `code: "context_length_exceeded"`,
 * with vLLM's wording ({@linkcode exhaustionMessage}): the `openai` SDK,
 * LangChain.js, the AI SDK and Hermes all read it as a context overflow, so
 * the host compresses and retries. It quotes the real context length, never
 * a smaller one.
 */
export function contextLengthExceeded(
  result: BudgetResult,
  options: Pick<BridgeOptions, "window" | "contextLength">,
): Response {
  return Response.json({
    error: {
      message: exhaustionMessage(exhaustionOf(result, options)),
      type: "invalid_request_error",
      param: "messages",
      code: CONTEXT_LENGTH_EXCEEDED,
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
