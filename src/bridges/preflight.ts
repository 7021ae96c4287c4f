/**
 * `preflight()`: for hosts with their own compressor. Before a request
 * exists, it tells the exact compression pressure of a conversation, so the
 * host compresses exactly when less than the minimum output would be left.
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
 * const { pressure, source } = await preflight({ messages }, { backend, contextLength: 65536 });
 * strictEqual(source, "vllm-tokenize");
 * strictEqual(pressure, 50000 + 4096 - 1);
 * strictEqual(pressure < window, true); // 5705 tokens left: send it as it is
 * ```
 *
 * @module
 */
import type { Backend, JsonObject } from "../core/backend.ts";
import { budget } from "../core/budget.ts";
import type { Estimator } from "../core/estimate.ts";
import { compressionPressure, requireInteger } from "../core/compute.ts";

export type * from "../core/contract_types.ts";
export type { Estimator } from "../core/estimate.ts";

/** The conversation a host is about to send. */
export interface PreflightInput {
  /** The chat messages, in the OpenAI shape. */
  readonly messages: readonly unknown[];
  /** Tool definitions, in the OpenAI chat shape. */
  readonly tools?: readonly unknown[];
  /** A system prompt the host prepends as the first message. */
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
   * window W. `undefined` when neither count worked (fail-open: no pressure).
   */
  readonly pressure: number | undefined;
  /** P: the prompt tokens counted, or estimated. */
  readonly promptTokens: number | undefined;
  /** The backend's source, `"rough-fallback"`, or `"none"`. */
  readonly source: string;
}

/**
 * Counts a conversation before the request exists and returns its
 * compression pressure `P + R - 1` (with a rough estimate: `P + F + R - 1`),
 * the number a host's compressor compares with the window W: it compresses
 * exactly when `W - P < R`. Never throws because of content or a failing
 * backend.
 *
 * @param input The messages, tools and system prompt.
 * @param options The backend, context length and tuning.
 * @returns The pressure, the prompt tokens and their source.
 * @throws {RangeError} Only for invalid options.
 *
 * @example Deciding to compress
 * ```ts
 * import { preflight } from "@incontext/incontext/preflight";
 * import { FakeBackend } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const window = 55705;
 * const { pressure } = await preflight(
 *   { system: "You are helpful.", messages: [{ role: "user", content: "Hi" }] },
 *   { backend: new FakeBackend({ count: 51610 }), contextLength: 65536 },
 * );
 * strictEqual(pressure, 51610 + 4096 - 1);
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
  requireInteger(minOutputTokens, {
    what: "run the preflight",
    name: "minOutputTokens",
    min: 1,
  });
  requireInteger(fallbackMarginTokens, {
    what: "run the preflight",
    name: "fallbackMarginTokens",
    min: 0,
  });
  // budget() does the counting and its fallback; with W = C and no cap, its
  // arithmetic is not needed, only P and the source.
  const result = await budget(chatRequest(input, options.model), {
    window: contextLength,
    contextLength,
    backend: options.backend,
    fallbackMarginTokens: 0,
    minOutputTokens: 1,
    kind: "chat",
    ...(options.estimate ? { estimate: options.estimate } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const tokens = result.promptTokens;
  if (tokens === undefined) {
    return {
      pressure: undefined,
      promptTokens: undefined,
      source: result.source,
    };
  }
  const margin = result.source === "rough-fallback" ? fallbackMarginTokens : 0;
  return {
    pressure: compressionPressure(tokens + margin, minOutputTokens),
    promptTokens: tokens,
    source: result.source,
  };
}

function chatRequest(
  input: PreflightInput,
  model: string | undefined,
): JsonObject {
  const system = typeof input?.system === "string"
    ? [{ role: "system", content: input.system }]
    : [];
  const messages = Array.isArray(input?.messages) ? input.messages : [];
  return {
    ...(model === undefined ? {} : { model }),
    messages: [...system, ...messages],
    ...(Array.isArray(input?.tools) ? { tools: input.tools } : {}),
  };
}
