/**
 * The AI SDK language-model middleware: budgets each call as the request
 * its OpenAI-compatible provider sends, and carries the decision into the
 * result's `providerMetadata.incontext`, where each step shows it.
 *
 * @module
 */
import { budget, type BudgetResult } from "../../core/budget.ts";
import { validateBudgetOptions } from "../../core/budget_settings.ts";
import { errorType } from "../../core/error_type.ts";
import { getLogger } from "@logtape/logtape";
import type { BridgeOptions } from "../options.ts";
import { applyPolicy } from "../policy.ts";
import { exhaustionOf } from "../answers.ts";
import { ContextWindowExhaustedError } from "../exhausted.ts";
import { requestIdOf } from "../../_internal/request_id.ts";
import { callRequest } from "./call.ts";
import type {
  GenerateResultLike,
  ModelCallParams,
  ModelMiddleware,
} from "./types.ts";

const logger = getLogger(["incontext", "bridge"]);

/** Options for {@linkcode budgetedModelMiddleware}: the HTTP bridges' options. */
export type BudgetedModelMiddlewareOptions = BridgeOptions;

/** The decision `providerMetadata.incontext` carries. */
export interface ModelDecision {
  /** `set`, `compress` or `unchanged`, as budget() answered. */
  readonly action: string;
  /** Where the count came from: the backend's source, or `"rough-fallback"`. */
  readonly source: string;
  /** P: the call's prompt tokens. */
  readonly promptTokens?: number;
  /** The cap sent, when one was written. */
  readonly maxTokens?: number;
  /** Why, when the action is `unchanged`. */
  readonly reason?: string;
  /** True for a call made while a compaction ran: the host's own summary call. */
  readonly compaction: boolean;
}

/** What a middleware shares with the compaction that made it. */
export interface MiddlewareHooks {
  /** Whether a compaction is running: its calls are marked as the compaction's. */
  readonly compacting?: () => boolean;
  /** Told the chat tools of each call, for the compaction's counts. */
  readonly sawTools?: (tools: unknown) => void;
}

/**
 * Creates an AI SDK language-model middleware (for `wrapLanguageModel()`)
 * that gives every call exactly the output budget still free below the
 * window, `min(maxOutputTokens, W - P)`, with P counted from the request the
 * OpenAI-compatible provider sends. When less than R is left it follows
 * `onExhausted` as the other bridges do: `clamp` sends min(maxOutputTokens,
 * R) while the context holds it, and otherwise (and under `reject`) the call
 * throws {@linkcode ContextWindowExhaustedError} without reaching the model.
 * Each result's `providerMetadata.incontext` carries the decision
 * ({@linkcode ModelDecision}); with streams, the `finish` part's.
 *
 * @param options The window, context length, backend and policy.
 * @returns The middleware.
 * @throws {RangeError} When the options are invalid (checked once, here).
 *
 * @example Wrapping a model
 * ```ts ignore
 * import { wrapLanguageModel, generateText } from "ai";
 * import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
 * import { VllmBackend } from "@incontext/incontext/vllm";
 * import { budgetedModelMiddleware } from "@incontext/incontext/ai-sdk";
 *
 * const vllm = createOpenAICompatible({ name: "vllm", baseURL: "http://127.0.0.1:8000/v1" });
 * const model = wrapLanguageModel({
 *   model: vllm("Qwen/Qwen3-8B"),
 *   middleware: budgetedModelMiddleware({
 *     window: 55705,
 *     contextLength: 65536,
 *     backend: new VllmBackend({ url: "http://127.0.0.1:8000/tokenize" }),
 *   }),
 * });
 * const { providerMetadata } = await generateText({ model, prompt: "Hi" });
 * console.log(providerMetadata?.incontext); // { action: "set", maxTokens: ..., ... }
 * ```
 */
export function budgetedModelMiddleware(
  options: BudgetedModelMiddlewareOptions,
): ModelMiddleware {
  return createModelMiddleware(options, {});
}

/** {@linkcode budgetedModelMiddleware} with a compaction's hooks. */
export function createModelMiddleware(
  options: BridgeOptions,
  hooks: MiddlewareHooks,
): ModelMiddleware {
  validateBudgetOptions(options);
  const decisions = new WeakMap<object, ModelDecision>();
  return {
    specificationVersion: "v4",
    async transformParams({ params, model }) {
      const { request } = callRequest(params, model.modelId);
      hooks.sawTools?.(request.tools);
      const result = await budget(request, {
        ...options,
        kind: "chat",
        ...(params.abortSignal ? { signal: params.abortSignal } : {}),
      });
      observe(options, result, params);
      const outcome = applyPolicy(result, options.onExhausted);
      if (outcome.send === "overflow") {
        throw new ContextWindowExhaustedError(exhaustionOf(result, options));
      }
      const sent = outcome.send === "cap"
        ? { ...params, maxOutputTokens: outcome.maxTokens }
        : params;
      decisions.set(sent, decision(result, outcome, hooks));
      return sent;
    },
    async wrapGenerate({ doGenerate, params }) {
      const result = await doGenerate();
      const made = decisions.get(params);
      if (made === undefined) return result;
      return {
        ...result,
        providerMetadata: withDecision(result.providerMetadata, made),
      } as typeof result;
    },
    async wrapStream({ doStream, params }) {
      const result = await doStream();
      const made = decisions.get(params);
      if (made === undefined) return result;
      const stream = result.stream.pipeThrough(
        new TransformStream<unknown, unknown>({
          transform(part, controller) {
            controller.enqueue(finishWithDecision(part, made));
          },
        }),
      );
      return { ...result, stream } as typeof result;
    },
  };
}

function decision(
  result: BudgetResult,
  outcome: ReturnType<typeof applyPolicy>,
  hooks: MiddlewareHooks,
): ModelDecision {
  return {
    action: result.action,
    source: result.source,
    ...(result.promptTokens === undefined
      ? {}
      : { promptTokens: result.promptTokens }),
    ...(outcome.send === "cap" ? { maxTokens: outcome.maxTokens } : {}),
    ...(result.action === "unchanged" ? { reason: result.reason } : {}),
    compaction: hooks.compacting?.() ?? false,
  };
}

function observe(
  options: BridgeOptions,
  result: BudgetResult,
  params: ModelCallParams,
): void {
  const headers = new Headers();
  for (const [name, value] of Object.entries(params.headers ?? {})) {
    if (value !== undefined) headers.set(name, value);
  }
  try {
    options.onDecision?.(result, "chat", {
      id: requestIdOf(headers.get("x-request-id")),
      url: "",
      headers,
    });
  } catch (error) {
    logger.warn(
      "The onDecision callback threw ({errorType}); the call went on",
      { errorType: errorType(error) },
    );
  }
}

function withDecision(
  metadata: GenerateResultLike["providerMetadata"],
  made: ModelDecision,
): Record<string, Readonly<Record<string, unknown>>> {
  return { ...metadata, incontext: { ...made } };
}

/** A stream part, with the decision when it is the `finish` part. */
function finishWithDecision(part: unknown, made: ModelDecision): unknown {
  if (
    typeof part !== "object" || part === null ||
    (part as { type?: unknown }).type !== "finish"
  ) {
    return part;
  }
  return {
    ...part,
    providerMetadata: withDecision(
      (part as GenerateResultLike).providerMetadata,
      made,
    ),
  };
}
