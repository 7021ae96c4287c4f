/**
 * `incontext check --check-chat on`: one small chat counted by the backend
 * and sent to the upstream's chat endpoint with `max_tokens: 1`, the count
 * compared with the response's `usage.prompt_tokens`. It proves the path
 * end to end where `/tokenize` and the chat endpoint could build different
 * prompts (vLLM renders gpt-oss through Harmony), at the cost of one
 * generation, so it runs only when asked.
 *
 * @module
 */
import type { Backend } from "../../core/backend.ts";
import { errorType } from "../../core/error_type.ts";
import { readLimited } from "../../_internal/limited_read.ts";
import { DIFFERENCES_TO_ESTIMATE } from "../../backends/_shared/contradictions.ts";
import { publicUrl, transportProblem } from "../setup/endpoint_problem.ts";

/** A generation of one token may wait behind others: longer than a count. */
const CHAT_TIMEOUT_MS = 30_000;

/** The largest chat answer read. */
const ANSWER_BYTES = 1024 * 1024;

/** The fixed chat: no user content ever goes into a check. */
const MESSAGES = [{ role: "user", content: "incontext chat check" }];

/** What the comparison found. */
export interface ChatUsage {
  /** Whether both numbers were had and are equal. */
  readonly agrees: boolean;
  /** The report's line, after its label. */
  readonly line: string;
}

/** Where and what the chat check compares. */
export interface ChatUsageTarget {
  readonly backend: Backend;
  /** The upstream root. */
  readonly upstream: string;
  /** The model to name in the chat, when known. */
  readonly model: string | undefined;
  readonly contextLength: number;
}

/**
 * Counts the chat, sends it, and compares.
 *
 * @param target The backend, the upstream, the model and the context length.
 * @returns Whether they agree, and the line saying so.
 */
export async function checkChatUsage(
  target: ChatUsageTarget,
): Promise<ChatUsage> {
  const { backend, model, contextLength } = target;
  const request = {
    ...(model === undefined ? {} : { model }),
    messages: MESSAGES,
    max_tokens: 1,
  };
  let counted: { tokens: number; source: string };
  try {
    const result = await backend.count(structuredClone(request), {
      contextLength,
      signal: AbortSignal.timeout(CHAT_TIMEOUT_MS),
    });
    counted = typeof result === "number"
      ? { tokens: result, source: backend.source }
      : { tokens: result.tokens, source: result.source ?? backend.source };
  } catch (error) {
    return {
      agrees: false,
      line: `the count failed (${errorType(error)}): not compared`,
    };
  }
  const served = await servedPromptTokens(target.upstream, request);
  if (typeof served === "string") return { agrees: false, line: served };
  const numbers =
    `${counted.source} counted ${counted.tokens} prompt tokens, the chat's usage ${served}`;
  if (served === counted.tokens) {
    return { agrees: true, line: `${numbers}: they agree` };
  }
  const reason = backend.estimateReason(model);
  return {
    agrees: false,
    line: `${numbers}: they differ, so ${
      reason === undefined
        ? `serve counts a model exactly until the usage contradicts ${DIFFERENCES_TO_ESTIMATE} of its counts, then from usage anchors with the fallback margin`
        : "serve counts from usage anchors with the fallback margin (see chat prompt)"
    }`,
  };
}

/** The chat's `usage.prompt_tokens`, or what went wrong, in words. */
async function servedPromptTokens(
  upstream: string,
  request: Record<string, unknown>,
): Promise<number | string> {
  const root = new URL(upstream);
  const url = `${root.origin}${
    root.pathname.replace(/\/+$/, "")
  }/v1/chat/completions`;
  let response: Response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(request),
      signal: AbortSignal.timeout(CHAT_TIMEOUT_MS),
      redirect: "manual",
    });
  } catch (error) {
    return `${publicUrl(url)}: ${
      transportProblem(error, CHAT_TIMEOUT_MS / 1000)
    }: not compared`;
  }
  const bytes = await readLimited(response.body, ANSWER_BYTES).catch(() =>
    undefined
  );
  if (response.status !== 200) {
    return `${publicUrl(url)} answered HTTP ${response.status}${
      response.status === 401 || response.status === 403
        ? " (it needs a key, which only clients send)"
        : ""
    }: not compared`;
  }
  let tokens: unknown;
  try {
    tokens = JSON.parse(new TextDecoder().decode(bytes)).usage.prompt_tokens;
  } catch {
    tokens = undefined;
  }
  return Number.isSafeInteger(tokens) && (tokens as number) >= 0
    ? tokens as number
    : `${publicUrl(url)} answered without usage.prompt_tokens: not compared`;
}
