/**
 * `preflight()` and `shouldCompress()`: for hosts with their own
 * compressor. Before a request exists, they tell the exact compression
 * pressure of a conversation (OpenAI chat, Responses, AI SDK or LangChain.js
 * messages), so the host compresses exactly when less than the minimum
 * output would be left, and say when and why a count is not exact.
 *
 * @example Checking a conversation against the window before sending it
 * ```ts
 * import { preflight } from "@incontext/incontext/preflight";
 * import { VllmBackend } from "@incontext/incontext/vllm";
 * import { createFakeVllmTokenizerHandler } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const fake = createFakeVllmTokenizerHandler({ countTokens: () => 50000 });
 * const backend = new VllmBackend({ url: "http://fake.test/tokenize", fetch: fake.fetch, cache: null });
 * const window = 55705;
 * const messages = [{ role: "user", content: "Summarise the repository." }];
 * const { pressure, source, exact } = await preflight({ messages }, { backend, contextLength: 65536 });
 * strictEqual(source, "vllm-tokenize");
 * strictEqual(exact, true);
 * strictEqual(pressure, 50000 + 4096 - 1);
 * strictEqual(pressure < window, true); // 5705 tokens left: send it as it is
 * ```
 *
 * @module
 */
import type { Backend } from "../core/backend.ts";
import type { Estimator } from "../core/estimate.ts";
import { compressionPressure, requireInteger } from "../core/compute.ts";
import { type ConversationShape, readConversation } from "./messages/read.ts";
import { countConversation } from "./messages/count.ts";

export type { ConversationShape } from "./messages/read.ts";

/** The conversation a host is about to send. */
export interface PreflightInput {
  /**
   * The messages, in one SDK's shape: OpenAI chat messages, Responses input
   * items, AI SDK `ModelMessage`s or LangChain.js messages. The AI SDK's and
   * LangChain.js's are counted as their OpenAI providers send them.
   */
  readonly messages: readonly unknown[];
  /** Tool definitions, in the OpenAI chat shape (the Responses shape for Responses items). */
  readonly tools?: readonly unknown[];
  /** A system prompt the host prepends (Responses: its `instructions`). */
  readonly system?: string;
}

/** Options for {@linkcode preflight}. */
export interface PreflightOptions {
  /** Counts the prompt exactly. */
  readonly backend: Backend;
  /** The served context length, in tokens. */
  readonly contextLength: number;
  /** The model, sent to the tokenizer. */
  readonly model?: string;
  /**
   * R: the smallest output worth asking for.
   *
   * @default 4096
   */
  readonly minOutputTokens?: number;
  /**
   * F: added to a rough estimate when the exact count fails.
   *
   * @default 1024
   */
  readonly fallbackMarginTokens?: number;
  /**
   * The rough estimator used when the exact count fails.
   *
   * @default roughEstimate
   */
  readonly estimate?: Estimator;
  /** Aborts the exact count; the estimate is used instead. */
  readonly signal?: AbortSignal;
}

/** What {@linkcode preflight} found. */
export interface PreflightResult {
  /**
   * P + R - 1 (P + F + R - 1 for an estimate): compress when it reaches the
   * window W. `undefined` when no count worked, or the chat template refuses
   * the conversation (fail-open: no pressure).
   */
  readonly pressure: number | undefined;
  /** P: the prompt tokens counted, or estimated. */
  readonly promptTokens: number | undefined;
  /** The backend's source, `"rough-fallback"`, or `"none"`. */
  readonly source: string;
  /**
   * True when P is the backend's exact count of the request the SDK sends
   * for this conversation.
   */
  readonly exact: boolean;
  /**
   * Why P is not exact, when it is not: the failed count's rule (a context
   * length the server contradicts, an unreachable tokenizer), a backend
   * whose count is in part an estimate, or a part of the conversation
   * counted from a stand-in. Never prompt text.
   */
  readonly reason?: string;
  /** The shape the messages were read in. */
  readonly shape: ConversationShape;
}

/**
 * Counts a conversation before the request exists and returns its
 * compression pressure `P + R - 1` (with a rough estimate: `P + F + R - 1`),
 * the number a host's compressor compares with the window W: it compresses
 * exactly when `W - P < R`. It reads OpenAI chat messages, Responses input
 * items, AI SDK `ModelMessage`s and LangChain.js messages, and says whether
 * the count is exact and, when not, why. Never throws because of the
 * backend.
 *
 * @param input The messages, tools and system prompt.
 * @param options The backend, context length and tuning.
 * @returns The pressure, the prompt tokens, their source, and whether they are exact.
 * @throws {RangeError} For invalid options.
 * @throws {TypeError} When `messages` is not an array, or a message fits none of the four shapes (the error names its index, never its content).
 *
 * @example Deciding to compress
 * ```ts
 * import { preflight } from "@incontext/incontext/preflight";
 * import { FakeBackend } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const window = 55705;
 * const { pressure, exact } = await preflight(
 *   { system: "You are helpful.", messages: [{ role: "user", content: "Hi" }] },
 *   { backend: new FakeBackend({ count: 51610 }), contextLength: 65536 },
 * );
 * strictEqual(pressure, 51610 + 4096 - 1);
 * strictEqual(exact, true);
 * strictEqual(pressure! >= window, true); // only 4095 left: compress first
 * ```
 */
export async function preflight(
  input: PreflightInput,
  options: PreflightOptions,
): Promise<PreflightResult> {
  const {
    minOutputTokens = 4096,
    fallbackMarginTokens = 1024,
    contextLength,
  } = options;
  const what = "run the preflight";
  requireInteger(contextLength, { what, name: "contextLength", min: 1 });
  requireInteger(minOutputTokens, { what, name: "minOutputTokens", min: 1 });
  requireInteger(fallbackMarginTokens, {
    what,
    name: "fallbackMarginTokens",
    min: 0,
  });
  const conversation = readConversation(input, options.model);
  const counted = await countConversation(conversation, {
    backend: options.backend,
    contextLength,
    estimate: options.estimate,
    signal: options.signal,
  });
  const { tokens, source, reason } = counted;
  const margin = source === "rough-fallback" ? fallbackMarginTokens : 0;
  return {
    pressure: tokens === undefined
      ? undefined
      : compressionPressure(tokens + margin, minOutputTokens),
    promptTokens: tokens,
    source,
    exact: reason === undefined,
    ...(reason === undefined ? {} : { reason }),
    shape: conversation.shape,
  };
}

/** Options for {@linkcode shouldCompress}: the preflight's, the window, tools and system prompt. */
export interface ShouldCompressOptions extends PreflightOptions {
  /** W: the prompt size at which the host compresses. */
  readonly window: number;
  /** Tool definitions, as {@linkcode PreflightInput.tools}. */
  readonly tools?: readonly unknown[];
  /** A system prompt the host prepends. */
  readonly system?: string;
}

/** What {@linkcode shouldCompress} found: the preflight's result, and the verdict. */
export interface CompressCheck extends PreflightResult {
  /**
   * True when less than R would be left below W for the reply (`pressure
   * >= window`); false when it fits, or when nothing could be counted.
   */
  readonly compress: boolean;
}

/**
 * Whether a host must compress its conversation before the next call:
 * {@linkcode preflight} against the window. Messages in any of the four
 * shapes.
 *
 * @param messages The conversation, in one SDK's shape.
 * @param options The backend, window, context length, tools and system prompt.
 * @returns The verdict with the preflight's counts.
 * @throws {RangeError} For invalid options.
 * @throws {TypeError} When a message fits none of the four shapes.
 *
 * @example An AI SDK conversation
 * ```ts
 * import { shouldCompress } from "@incontext/incontext/preflight";
 * import { FakeBackend } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const check = await shouldCompress(
 *   [
 *     { role: "user", content: "Read the log." },
 *     { role: "assistant", content: [{ type: "tool-call", toolCallId: "c1", toolName: "read", input: {} }] },
 *     { role: "tool", content: [{ type: "tool-result", toolCallId: "c1", toolName: "read", output: { type: "text", value: "..." } }] },
 *   ],
 *   { backend: new FakeBackend({ count: 52000 }), contextLength: 65536, window: 55705 },
 * );
 * strictEqual(check.shape, "ai-sdk");
 * strictEqual(check.compress, true); // 3,705 tokens left: less than R
 * ```
 */
export async function shouldCompress(
  messages: readonly unknown[],
  options: ShouldCompressOptions,
): Promise<CompressCheck> {
  const { window, tools, system } = options;
  requireInteger(window, {
    what: "check for compression",
    name: "window",
    min: 1,
  });
  const result = await preflight({
    messages,
    ...(tools === undefined ? {} : { tools }),
    ...(system === undefined ? {} : { system }),
  }, options);
  return {
    ...result,
    compress: result.pressure !== undefined && result.pressure >= window,
  };
}
