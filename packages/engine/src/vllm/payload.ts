/**
 * Turns a chat completions request into the body of vLLM's `POST /tokenize`
 * (chat form), decides what that endpoint cannot count, and bounds its answer.
 *
 * Every field is read as the server would see it: OpenAI SDKs merge
 * `extra_body` shallowly into the request body, so an `extra_body` value wins
 * over the top-level one, also for `model`, `messages` and `tools`.
 *
 * @module
 */

import type { CapField, JsonObject, RequestKind } from "../common/request.ts";
import { laxInteger } from "./caps.ts";
import { EngineError } from "../common/errors.ts";
import { effectiveField, isJsonObject } from "../common/request.ts";
import { type VllmRules, vllmRules } from "./release.ts";

const NEWEST_RULES = vllmRules();

/**
 * The request fields `/tokenize` reads, in the order they are sent. The order
 * is part of the cache key and can reach the prompt, so it is never sorted.
 */
const PAYLOAD_FIELDS = [
  "model",
  "messages",
  "tools",
  "add_generation_prompt",
  "continue_final_message",
  "add_special_tokens",
  "chat_template",
  "chat_template_kwargs",
  "media_io_kwargs",
  "mm_processor_kwargs",
] as const;

/**
 * Fails the count of a request `/tokenize` cannot mirror, before any HTTP call.
 *
 * @param request The request body.
 * @throws {EngineError} When `messages` is not an array, when `tool_choice`
 * other than `"auto"` comes with tools, or when a `response_format` is set.
 */
export function assertMirrorable(request: JsonObject): void {
  if (!Array.isArray(effectiveField(request, "messages"))) {
    throw new EngineError(
      "Cannot count the request as 'messages' is not an array",
    );
  }
  const tools = effectiveField(request, "tools");
  const toolChoice = effectiveField(request, "tool_choice");
  if (
    Array.isArray(tools) && tools.length > 0 && toolChoice !== undefined &&
    toolChoice !== null && toolChoice !== "auto"
  ) {
    throw new EngineError("vLLM /tokenize cannot mirror tool_choice");
  }
  const responseFormat = effectiveField(request, "response_format");
  if (responseFormat !== undefined && responseFormat !== null) {
    throw new EngineError("vLLM /tokenize cannot mirror response_format");
  }
}

/**
 * Builds the `/tokenize` chat body for a request that passed
 * {@linkcode assertMirrorable}: the request's own fields, `messages` as they
 * are (the server applies its own rules to them, as its chat path does);
 * only what `/tokenize` has no field for is folded into
 * `chat_template_kwargs`, as the release of `rules` folds it. Never mutates
 * `request`; nested values are shared, as the caller only serialises the result.
 *
 * @param request The request body.
 * @param rules The rules of the vLLM release served.
 * @returns The body, with fields in the order of {@linkcode PAYLOAD_FIELDS}.
 */
export function buildTokenizePayload(
  request: JsonObject,
  rules: VllmRules = NEWEST_RULES,
): Record<string, unknown> {
  const payload: Record<string, unknown> = {};
  for (const field of PAYLOAD_FIELDS) {
    let value: unknown;
    if (field === "chat_template_kwargs") {
      value = templateKwargs(request, rules);
    } else value = effectiveField(request, field);
    if (field === "add_generation_prompt" && value === undefined) value = true;
    if (value !== undefined) payload[field] = value;
  }
  return payload;
}

/**
 * Tells whether a request's `/tokenize` body depends on the vLLM release:
 * only a `reasoning_effort` is folded differently by different releases.
 *
 * @param request The request body.
 * @returns Whether the served release must be known to build the body.
 */
export function dependsOnRelease(request: JsonObject): boolean {
  const effort = effectiveField(request, "reasoning_effort");
  return effort !== undefined && effort !== null;
}

/**
 * Builds the `/tokenize` text-form body of a completions request:
 * `{ model?, prompt, add_special_tokens }` (vLLM's text form adds special
 * tokens unless told otherwise, as its completions endpoint does).
 *
 * @param request A completions request body.
 * @returns The body.
 * @throws {EngineError} When `prompt` is not a single string.
 */
export function buildCompletionPayload(
  request: JsonObject,
): Record<string, unknown> {
  const prompt = effectiveField(request, "prompt");
  if (typeof prompt !== "string") {
    throw new EngineError(
      "Cannot count the completion as 'prompt' is not a single string",
    );
  }
  const payload: Record<string, unknown> = {};
  const model = effectiveField(request, "model");
  if (model !== undefined) payload.model = model;
  payload.prompt = prompt;
  payload.add_special_tokens = effectiveField(request, "add_special_tokens") ??
    true;
  return payload;
}

/**
 * Folds `documents` and (from the release whose chat path passes it on)
 * `reasoning_effort` into `chat_template_kwargs`, where the template reads
 * them. A `documents` key the caller set in `chat_template_kwargs` wins; the
 * top-level `reasoning_effort` wins over one there, unless it is `"auto"`,
 * which vLLM's `merge_kwargs` (vllm/renderers/params.py) treats as unset.
 * Nothing else is added: the template derives what it needs from the effort.
 */
function templateKwargs(request: JsonObject, rules: VllmRules): unknown {
  const given = effectiveField(request, "chat_template_kwargs");
  const documents = effectiveField(request, "documents");
  const effort = rules.reasoningEffortKwarg
    ? effectiveField(request, "reasoning_effort")
    : undefined;
  const hasDocuments = documents !== undefined && documents !== null;
  const hasEffort = effort !== undefined && effort !== null &&
    effort !== "auto";
  // A malformed `chat_template_kwargs` goes as given: the server rejects it as it would the request.
  if (
    (!hasDocuments && !hasEffort) ||
    (given !== undefined && given !== null && !isJsonObject(given))
  ) {
    return given;
  }
  const kwargs: Record<string, unknown> = isJsonObject(given)
    ? { ...given }
    : {};
  if (hasDocuments) setDefault(kwargs, "documents", documents);
  if (hasEffort) kwargs.reasoning_effort = effort;
  return kwargs;
}

function setDefault(
  target: Record<string, unknown>,
  key: string,
  value: unknown,
): void {
  if (target[key] === undefined) target[key] = value;
}

/**
 * Reads the prompt of a disaggregated decode request.
 *
 * @param request The request body.
 * @returns The length of `kv_transfer_params.prompt_token_ids` when it is a
 * non-empty array of non-negative integers, else `undefined`.
 */
export function transferredPromptLength(
  request: JsonObject,
): number | undefined {
  const params = effectiveField(request, "kv_transfer_params");
  if (!isJsonObject(params)) return undefined;
  const ids = params.prompt_token_ids;
  if (!Array.isArray(ids) || ids.length === 0) return undefined;
  for (let index = 0; index < ids.length; index++) {
    const id: unknown = ids[index];
    if (typeof id !== "number" || !Number.isSafeInteger(id) || id < 0) {
      return undefined;
    }
  }
  return ids.length;
}

/**
 * Reads `truncate_prompt_tokens` as vLLM does (a lax integer; `-1` means none).
 *
 * @param request The request body.
 * @returns The token limit T >= 0, or `undefined` for none.
 */
export function truncationLimit(request: JsonObject): number | undefined {
  const limit = laxInteger(effectiveField(request, "truncate_prompt_tokens"));
  return limit !== undefined && limit >= 0 ? limit : undefined;
}

/**
 * Tells whether any message carries a content part other than text; such
 * parts expand after truncation, so `truncate_prompt_tokens` caps nothing.
 *
 * @param request The request body.
 * @returns Whether the prompt is multimodal.
 */
export function isMultimodal(request: JsonObject): boolean {
  const messages = effectiveField(request, "messages");
  if (!Array.isArray(messages)) return false;
  return messages.some((message: unknown) =>
    isJsonObject(message) && Array.isArray(message.content) &&
    message.content.some((part: unknown) =>
      !isJsonObject(part) || part.type !== "text"
    )
  );
}

/**
 * The largest `/tokenize` answer worth reading, in bytes: 64 KiB for the
 * count and framing, plus 16 bytes per context token, since vLLM lists every
 * token id of the prompt (6 digits and a comma for vocabularies below a
 * million). Anything larger is a broken or hostile server, not a count.
 *
 * @param contextLength The served context length, in tokens.
 * @returns The cap in bytes.
 */
export function maxTokenizeResponseBytes(contextLength: number): number {
  return 64 * 1024 + 16 * contextLength;
}

/**
 * The field vLLM reads for a cap: Responses read only `max_output_tokens`;
 * chat completions and completions ignore it, so it becomes `max_tokens`.
 */
export function vllmOutputField(
  field: CapField,
  kind: RequestKind | undefined,
): string {
  if (kind === "responses") return "max_output_tokens";
  return field === "max_output_tokens" ? "max_tokens" : field;
}

/**
 * The largest cap vLLM accepts for a request with `truncate_prompt_tokens`
 * T >= 0: the context length minus T (never below 0); undefined otherwise.
 */
export function vllmOutputLimit(
  request: JsonObject,
  contextLength: number,
): number | undefined {
  const limit = isJsonObject(request) ? truncationLimit(request) : undefined;
  return limit === undefined ? undefined : Math.max(0, contextLength - limit);
}
