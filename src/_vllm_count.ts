/**
 * How vLLM counts a request's prompt, for the backends that mirror it (vLLM
 * over HTTP, local in process, SGLang's local render): the `/tokenize` body
 * and the truncation rule.
 *
 * @module
 */
import type { JsonObject, RequestKind } from "./backend.ts";
import { responsesToChat } from "./_responses.ts";
import {
  assertMirrorable,
  buildCompletionPayload,
  buildTokenizePayload,
  isMultimodal,
  transferredPromptLength,
  truncationLimit,
} from "./_vllm_payload.ts";

/** The `/tokenize` body: the text form for completions, the chat form otherwise. */
export function vllmTokenizeBody(
  request: JsonObject,
  kind: RequestKind,
): Record<string, unknown> {
  if (kind === "completion") return buildCompletionPayload(request);
  const chat = kind === "responses" ? responsesToChat(request) : request;
  assertMirrorable(chat);
  return buildTokenizePayload(chat);
}

/**
 * The prompt tokens vLLM sees: a transferred prompt's length, else the
 * template's count from `countTemplated`, capped at `truncate_prompt_tokens`
 * for text-only prompts.
 */
export async function vllmPromptTokens(
  request: JsonObject,
  countTemplated: () => Promise<number>,
): Promise<number> {
  const counted = transferredPromptLength(request) ?? await countTemplated();
  const limit = truncationLimit(request);
  return limit !== undefined && !isMultimodal(request)
    ? Math.min(counted, limit)
    : counted;
}
