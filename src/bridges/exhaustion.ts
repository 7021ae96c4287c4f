/**
 * The counts of an exhausted window and the overflow message that states
 * them, shared by the 400 the bridges answer and
 * `ContextWindowExhaustedError`.
 *
 * @module
 */

/** The error code of the overflow answer, as OpenAI's own. */
export const CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded";

/** Why a request cannot go on: the counts its overflow answer states. */
export interface ContextWindowExhaustion {
  /** P: the prompt tokens counted (or estimated). */
  readonly promptTokens: number;
  /** C: the served context length. */
  readonly contextLength: number;
  /** W: the compression window. */
  readonly window: number;
  /** The smallest reply worth sending: min(caller's cap, R). */
  readonly requiredTokens: number;
  /**
   * What is left for the reply: below W when the context still holds
   * `requiredTokens` (`fitsContext`), else below C. Never below 0.
   */
  readonly availableTokens: number;
  /**
   * True when only the window is full: the context length still holds
   * `requiredTokens` after the prompt.
   */
  readonly fitsContext: boolean;
  /**
   * True when P is, in part or whole, an estimate.
   *
   * @default false
   */
  readonly estimated?: boolean;
}

/**
 * The overflow message, in vLLM's wording (`vllm/renderers/params.py`) with
 * the real C, W and P. It names no requested output and no `max_tokens`:
 * Hermes reads "maximum context length" with "requested ... output tokens" as
 * a cap it may lower, and would send the tiny cap this answer refuses.
 */
export function exhaustionMessage(exhaustion: ContextWindowExhaustion): string {
  const { contextLength, window, promptTokens, requiredTokens } = exhaustion;
  const about = exhaustion.estimated ? "about " : "";
  const where = exhaustion.fitsContext
    ? "below the compression window"
    : "within the maximum context length";
  const left = Math.max(0, exhaustion.availableTokens);
  return `This model's maximum context length is ${contextLength} tokens, and its compression window is ${window} tokens. However, your prompt contains ${about}${promptTokens} input tokens, which leaves ${left} tokens for the reply ${where}, fewer than the ${requiredTokens} it needs. Please reduce the length of the messages.`;
}
