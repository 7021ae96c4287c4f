/**
 * How vLLM counts a request's prompt, for the backends that mirror it (vLLM
 * over HTTP, local in process, SGLang's local render): the `/tokenize` body
 * and the truncation rule.
 *
 * @module
 */
import type {
  CountOptions,
  JsonObject,
  RequestKind,
} from "../../core/backend.ts";
import { CountError, countErrorOf } from "../../core/errors.ts";
import type { VllmRules } from "@incontext/engine/vllm";
import type { GuardedCount } from "./count_guard.ts";
import { responsesToChat } from "./responses.ts";
import { effectiveField } from "../../core/request.ts";
import {
  assertMirrorable,
  buildCompletionPayload,
  buildTokenizePayload,
  isMultimodal,
  transferredPromptLength,
  truncationLimit,
} from "@incontext/engine/vllm";

/**
 * The `/tokenize` body: the text form for completions, the chat form
 * otherwise, built by the rules of the release served (the newest known by default).
 */
export function vllmTokenizeBody(
  request: JsonObject,
  kind: RequestKind,
  rules?: VllmRules,
): Record<string, unknown> {
  if (kind === "completion") return buildCompletionPayload(request);
  const chat = kind === "responses" ? responsesToChat(request) : request;
  assertMirrorable(chat);
  return buildTokenizePayload(chat, rules);
}

/**
 * The `/tokenize` body a local template render mirrors:
 * {@linkcode localCountBody} without Harmony's Responses fields and
 * `tool_choice`, failing with its `refusal`.
 */
export function localTokenizeBody(
  request: JsonObject,
  kind: RequestKind,
  rules?: VllmRules,
): Record<string, unknown> {
  const { refusal, responses: _, tool_choice: __, ...payload } = localCountBody(
    request,
    kind,
    rules,
  );
  if (typeof refusal === "string") throw new CountError(refusal);
  return payload;
}

/** The Responses fields vLLM's Harmony path reads (`ResponsesRequest`'s). */
const HARMONY_RESPONSES_FIELDS = [
  "input",
  "instructions",
  "tools",
  "tool_choice",
  "reasoning",
  "include",
  "prompt",
  "previous_response_id",
  "previous_input_messages",
];

/**
 * The payload of a local count: {@linkcode vllmTokenizeBody}, with what
 * vLLM's Harmony path for gpt-oss reads instead: a chat's
 * `reasoning_effort` and `tool_choice`, a Responses request's own fields as
 * `responses`. What the chat template path cannot count (a request's own
 * `chat_template`, which the server may refuse, included) travels as
 * `refusal`, for the model host to fail the count unless Harmony renders it.
 */
export function localCountBody(
  request: JsonObject,
  kind: RequestKind,
  rules?: VllmRules,
): Record<string, unknown> {
  if (kind === "completion") return buildCompletionPayload(request);
  let payload: Record<string, unknown> = {};
  let refusal: string | undefined;
  try {
    const chat = kind === "responses" ? responsesToChat(request) : request;
    payload = buildTokenizePayload(chat, rules);
    assertMirrorable(chat);
    if (payload.chat_template !== undefined && payload.chat_template !== null) {
      refusal =
        "Cannot count a request's own chat_template locally: the server may refuse it";
    }
  } catch (error) {
    const known = countErrorOf(error);
    if (!(known instanceof CountError)) throw error;
    refusal = known.message;
  }
  const fields = kind === "responses"
    ? HARMONY_RESPONSES_FIELDS
    : ["reasoning_effort", "tool_choice"];
  const own: Record<string, unknown> = {};
  for (const field of fields) {
    const value = effectiveField(request, field);
    if (value !== undefined) own[field] = value;
  }
  return {
    ...payload,
    ...(kind === "responses" ? { responses: own } : own),
    ...(refusal === undefined ? {} : { refusal }),
  };
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

/** What a {@linkcode TemplatedCount} counts for: one count's settled options. */
export interface TemplatedCountOptions {
  /** The request's kind, defaulted. */
  readonly kind: RequestKind;
  /** The context length the count guard checked. */
  readonly contextLength: number;
  /** The caller's abort signal. */
  readonly signal?: AbortSignal | undefined;
}

/** Counts a request's template render: what each vLLM-mirroring backend does its own way. */
export type TemplatedCount = (
  request: JsonObject,
  options: TemplatedCountOptions,
) => Promise<number>;

/**
 * The count a vLLM-mirroring backend runs inside its count guard:
 * {@linkcode vllmPromptTokens} over `countTemplated`, for the request kind
 * and signal of `options`.
 */
export function vllmCount(
  options: CountOptions,
  countTemplated: TemplatedCount,
): GuardedCount<number> {
  return (request, contextLength) =>
    vllmPromptTokens(
      request,
      () =>
        countTemplated(request, {
          kind: options.kind ?? "chat",
          contextLength,
          signal: options.signal,
        }),
    );
}
