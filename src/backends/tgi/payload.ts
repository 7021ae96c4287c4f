/**
 * The bodies TGI (Hugging Face text-generation-inference) counts with, and
 * how its `/info` limits are read.
 *
 * `/chat_tokenize` deserializes the same `ChatRequest` as
 * `/v1/chat/completions` and renders it the same way (`try_into_generate`),
 * so the fields that shape the prompt are sent as the caller gave them.
 * `extra_body` values win, as OpenAI SDKs merge them into the body.
 *
 * @module
 */
import type { JsonObject } from "../../core/backend.ts";
import { CountError } from "../../core/errors.ts";
import { effectiveField, isJsonObject } from "../../core/request.ts";

/**
 * The `ChatRequest` fields that reach the prompt (or reject the request:
 * `response_format` with tools), in the order they are sent. The order is
 * part of the cache key, so it is never sorted.
 */
const CHAT_FIELDS = [
  "model",
  "messages",
  "tools",
  "tool_choice",
  "tool_prompt",
  "response_format",
  "guideline",
] as const;

/**
 * The `/chat_tokenize` body of a chat request.
 *
 * @throws {CountError} When `messages` is not an array.
 */
export function chatTokenizePayload(
  request: JsonObject,
): Record<string, unknown> {
  if (!Array.isArray(effectiveField(request, "messages"))) {
    throw new CountError(
      "Cannot count the request as 'messages' is not an array",
    );
  }
  const payload: Record<string, unknown> = {};
  for (const field of CHAT_FIELDS) {
    const value = effectiveField(request, field);
    if (value !== undefined) payload[field] = value;
  }
  return payload;
}

/**
 * The `/tokenize` body of a completions request: `{inputs}`, with TGI's
 * default `add_special_tokens: true`, as its completions endpoint does.
 *
 * @throws {CountError} When `prompt` is not a single string.
 */
export function tgiTokenizeBody(request: JsonObject): { inputs: string } {
  const prompt = effectiveField(request, "prompt");
  if (typeof prompt !== "string") {
    throw new CountError(
      "Cannot count the completion as 'prompt' is not a single string",
    );
  }
  return { inputs: prompt };
}

/** TGI's prompt and total limits, from `GET /info`. */
export interface TgiLimits {
  /** `max_input_tokens` (`max_input_length` before TGI 2.1): the longest prompt. */
  readonly maxInputTokens: number;
  /** `max_total_tokens`: prompt + `max_new_tokens` at most. */
  readonly maxTotalTokens: number;
}

/**
 * Reads the limits of a `/info` answer.
 *
 * @throws {CountError} When either limit is not a positive integer.
 */
export function readLimits(info: JsonObject): TgiLimits {
  const input = info.max_input_tokens ?? info.max_input_length;
  const total = info.max_total_tokens;
  if (!isPositiveInteger(input)) {
    throw new CountError("TGI /info returned an invalid max_input_tokens");
  }
  if (!isPositiveInteger(total)) {
    throw new CountError("TGI /info returned an invalid max_total_tokens");
  }
  return { maxInputTokens: input, maxTotalTokens: total };
}

function isPositiveInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) &&
    value > 0;
}

/** Whether `value` is a list of TGI tokens (`{id, text, start, stop}`). */
export function isTokenList(value: unknown): value is unknown[] {
  return Array.isArray(value) &&
    value.every((token) =>
      isJsonObject(token) && typeof token.id === "number" &&
      Number.isSafeInteger(token.id) && token.id >= 0
    );
}

/** The largest `u32`, the type TGI reads `max_tokens` into. */
const U32_MAX = 4_294_967_295;

/**
 * Reads a cap as TGI's serde does (`Option<u32>`): an integer number only;
 * floats, strings and booleans make TGI reject the request, so they are no cap.
 *
 * @returns A positive integer, or `undefined`.
 */
export function tgiCap(value: unknown): number | undefined {
  return typeof value === "number" && Number.isSafeInteger(value) &&
      value > 0 && value <= U32_MAX
    ? value
    : undefined;
}
