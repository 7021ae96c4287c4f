/**
 * `summarizationBudget()`: the exact `tokenCounter` and the `trigger` for
 * LangChain.js's `summarizationMiddleware`, so that an agent summarises at
 * exactly the model call whose prompt would leave less than R below W.
 *
 * @module
 */
import { requireInteger } from "../../core/compute.ts";
import { preflight, type PreflightOptions } from "../preflight.ts";

/** Options for {@linkcode summarizationBudget}. */
export interface SummarizationBudgetOptions extends PreflightOptions {
  /** W: the prompt size at which the agent must summarise. */
  readonly window: number;
  /**
   * The agent's system prompt (`createAgent`'s `systemPrompt`), counted
   * with the messages as the model call sends it.
   */
  readonly system?: string;
  /**
   * The agent's tools in the OpenAI chat shape (`convertToOpenAITool` of
   * `@langchain/core/utils/function_calling`), counted with the messages.
   */
  readonly tools?: readonly unknown[];
}

/** What `summarizationMiddleware` takes from {@linkcode summarizationBudget}. */
export interface SummarizationBudget {
  /**
   * P of the model call `messages` make (with the system prompt and tools),
   * counted exactly by the backend; with a rough estimate, P + F.
   */
  readonly tokenCounter: (messages: readonly unknown[]) => Promise<number>;
  /** Summarise once the count reaches W - R + 1: less than R would be left. */
  readonly trigger: { readonly tokens: number };
}

/**
 * The `tokenCounter` and `trigger` for LangChain.js's
 * `summarizationMiddleware`: it then summarises at exactly the call whose
 * prompt, counted by the backend as `ChatOpenAI` sends it, leaves less
 * than R below W. The count covers the system prompt and tools given here;
 * `keep: { tokens }` and `trimTokensToSummarize` count them too.
 *
 * @param options The backend, window, context length, and the agent's system prompt and tools.
 * @returns `{ tokenCounter, trigger }`, to spread into the middleware's options.
 * @throws {RangeError} When the options are invalid.
 *
 * @example With createAgent
 * ```ts ignore
 * import { createAgent, summarizationMiddleware } from "langchain";
 * import { ChatOpenAI } from "@langchain/openai";
 * import { VllmBackend } from "@incontext/incontext/vllm";
 * import { summarizationBudget } from "@incontext/incontext/langchain";
 *
 * const model = new ChatOpenAI({ model: "Qwen/Qwen3-8B", configuration: { baseURL: "http://127.0.0.1:8000/v1" } });
 * const agent = createAgent({
 *   model,
 *   tools,
 *   systemPrompt: "You fix builds.",
 *   middleware: [summarizationMiddleware({
 *     model,
 *     keep: { messages: 6 },
 *     ...summarizationBudget({
 *       window: 55705,
 *       contextLength: 65536,
 *       backend: new VllmBackend({ url: "http://127.0.0.1:8000/tokenize" }),
 *       system: "You fix builds.",
 *     }),
 *   })],
 * });
 * ```
 */
export function summarizationBudget(
  options: SummarizationBudgetOptions,
): SummarizationBudget {
  const { window, minOutputTokens = 4096, system, tools } = options;
  requireInteger(window, {
    what: "create the summarization budget",
    name: "window",
    min: 1,
  });
  requireInteger(minOutputTokens, {
    what: "create the summarization budget",
    name: "minOutputTokens",
    min: 1,
  });
  return {
    async tokenCounter(messages) {
      const { pressure } = await preflight({
        messages,
        ...(system === undefined ? {} : { system }),
        ...(tools === undefined ? {} : { tools }),
      }, options);
      // P, plus F for an estimate; 0 when nothing could be counted (fail-open).
      return pressure === undefined ? 0 : pressure - minOutputTokens + 1;
    },
    trigger: { tokens: window - minOutputTokens + 1 },
  };
}
