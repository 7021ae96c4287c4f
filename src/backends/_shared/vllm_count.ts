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
import { CountError } from "../../core/errors.ts";
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
 * The `/tokenize` body a local render mirrors: {@linkcode vllmTokenizeBody},
 * except that a request's own `chat_template` fails, as the server may
 * refuse it; a chat's `reasoning_effort` comes along as it is, for the
 * renderers that read the request's own (vLLM's Harmony path for gpt-oss).
 */
export function localTokenizeBody(
  request: JsonObject,
  kind: RequestKind,
  rules?: VllmRules,
): Record<string, unknown> {
  const payload = vllmTokenizeBody(request, kind, rules);
  if (payload.chat_template !== undefined && payload.chat_template !== null) {
    throw new CountError(
      "Cannot count a request's own chat_template locally: the server may refuse it",
    );
  }
  const effort = kind === "chat"
    ? effectiveField(request, "reasoning_effort")
    : undefined;
  return effort === undefined
    ? payload
    : { ...payload, reasoning_effort: effort };
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
