/**
 * The bodies llama.cpp's server counts with, and how it reads output caps.
 *
 * `/apply-template` parses its body exactly as `/v1/chat/completions` does
 * (`oaicompat_chat_params_parse`), so the fields that shape the prompt are
 * sent as the caller gave them, with no defaults added: the server fills
 * its own. `extra_body` values win, as OpenAI SDKs merge them into the body.
 *
 * @module
 */
import type { JsonObject } from "../../core/backend.ts";
import { CountError } from "../../core/errors.ts";
import { effectiveField, isJsonObject } from "../../core/request.ts";

/**
 * The request fields `oaicompat_chat_params_parse` reads to render the
 * prompt (or to reject the request), in the order they are sent. The order is
 * part of the cache key and can reach the prompt, so it is never sorted.
 */
const TEMPLATE_FIELDS = [
  "model",
  "messages",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "response_format",
  "json_schema",
  "grammar",
  "chat_template_kwargs",
  "add_generation_prompt",
  "reasoning_format",
] as const;

/** Content parts llama.cpp turns into media chunks, which `/tokenize` cannot count. */
const MEDIA_PARTS: ReadonlySet<unknown> = new Set(["image_url", "input_audio"]);

/**
 * The `/apply-template` body of a chat request.
 *
 * @throws {CountError} When `messages` is not an array, or a message holds
 * an image or audio part: those become media chunks of their own size after
 * templating, which the text `/tokenize` cannot count.
 */
export function applyTemplatePayload(
  request: JsonObject,
): Record<string, unknown> {
  const messages = effectiveField(request, "messages");
  if (!Array.isArray(messages)) {
    throw new CountError(
      "Cannot count the request as 'messages' is not an array",
    );
  }
  if (messages.some(hasMedia)) {
    throw new CountError("llama.cpp /tokenize cannot count images or audio");
  }
  const payload: Record<string, unknown> = {};
  for (const field of TEMPLATE_FIELDS) {
    const value = effectiveField(request, field);
    if (value !== undefined) payload[field] = value;
  }
  return payload;
}

function hasMedia(message: unknown): boolean {
  return isJsonObject(message) && Array.isArray(message.content) &&
    message.content.some((part: unknown) =>
      isJsonObject(part) && MEDIA_PARTS.has(part.type)
    );
}

/**
 * The `/tokenize` body for a text the server tokenizes as a prompt: with
 * special tokens added (BOS) and parsed, as its completion path does.
 */
export function llamacppTokenizeBody(content: string): Record<string, unknown> {
  return { content, add_special: true, parse_special: true };
}

/**
 * The prompt of a completions request.
 *
 * @throws {CountError} When `prompt` is not a single string (llama.cpp also
 * takes token arrays and mixed lists, which are not counted here).
 */
export function completionPrompt(request: JsonObject): string {
  const prompt = effectiveField(request, "prompt");
  if (typeof prompt !== "string") {
    throw new CountError(
      "Cannot count the completion as 'prompt' is not a single string",
    );
  }
  return prompt;
}

/** The largest `int32_t`, the type llama.cpp reads caps into. */
const INT32_MAX = 2_147_483_647;

/**
 * Reads a cap as llama.cpp's `json_value<int>` does (nlohmann `get<int>`):
 * numbers are truncated toward zero, booleans are 0 or 1, and anything else
 * (strings included) falls back to the default, that is, no cap.
 *
 * @returns A positive integer, or `undefined`.
 */
export function llamaCppCap(value: unknown): number | undefined {
  let number: number;
  if (typeof value === "boolean") number = value ? 1 : 0;
  else if (typeof value === "number" && Number.isFinite(value)) {
    number = Math.trunc(value);
  } else return undefined;
  return number > 0 && number <= INT32_MAX ? number : undefined;
}

/**
 * The smallest `n_predict` cap at either level: llama.cpp reads `n_predict`
 * before `max_tokens`, so a caller's `n_predict` is a cap too.
 */
export function nPredictCap(
  request: JsonObject,
  coerce: (value: unknown) => number | undefined,
): number | undefined {
  const extra = request.extra_body;
  const caps = [request, isJsonObject(extra) ? extra : {}]
    .filter((level) => Object.hasOwn(level, "n_predict"))
    .map((level) => coerce(level.n_predict))
    .filter((cap): cap is number => cap !== undefined);
  return caps.length === 0 ? undefined : Math.min(...caps);
}

/**
 * `request` without `n_predict` at either level (only the objects changed
 * are copied): it would win over the cap written, whatever its value.
 */
export function withoutNPredict(request: JsonObject): JsonObject {
  const drop = (level: JsonObject): Record<string, unknown> =>
    Object.fromEntries(
      Object.entries(level).filter(([key]) => key !== "n_predict"),
    );
  const extra = request.extra_body;
  const nested = isJsonObject(extra) && Object.hasOwn(extra, "n_predict");
  if (!Object.hasOwn(request, "n_predict") && !nested) return request;
  const copy = drop(request);
  if (nested) copy.extra_body = drop(extra);
  return copy;
}
