/**
 * `compactionFilter()`: the OpenAI Agents SDK's `callModelInputFilter`,
 * compacting a run's input at exactly the model call that would leave less
 * than R below the window. The host says how to compact; the filter counts
 * each call's input exactly, compacts when it must, keeps the cut for later
 * calls and runs, and leaves the host's own summary run alone.
 *
 * @module
 */
import { requireInteger } from "../../core/compute.ts";
import type { Estimator } from "../../core/estimate.ts";
import type { Backend } from "../../core/backend.ts";
import { shouldCompress } from "../preflight.ts";
import { Cuts } from "../cuts.ts";
import { agentTools, itemsToChat } from "./items.ts";

/** The input of one model call, as `callModelInputFilter` is given it. */
export interface ModelInput<I> {
  /** The items the call sends. */
  readonly input: I[];
  /** The agent's instructions, sent as the system message. */
  readonly instructions?: string;
}

/** What the host's `compact` is told. */
export interface FilterCompactionContext {
  /** P: the call's prompt tokens. */
  readonly promptTokens: number;
  /** W: the window the prompt must stay below, with R to spare. */
  readonly window: number;
  /** C: the served context length. */
  readonly contextLength: number;
  /** Whether P is exact; when not, `reason` says why. */
  readonly exact: boolean;
  /** Why P is not exact, when it is not. */
  readonly reason?: string;
}

/** Options for {@linkcode compactionFilter}. */
export interface CompactionFilterOptions<I> {
  /** W: the prompt size at which the agent must compact. */
  readonly window: number;
  /** C: the served context length. */
  readonly contextLength: number;
  /** Counts each call's prompt exactly. */
  readonly backend: Backend;
  /**
   * How to compact: the items to send in place of `input`, such as a
   * summary of the older ones followed by the latest. A summary run made
   * here with the same filter is left alone.
   */
  readonly compact: (
    input: I[],
    context: FilterCompactionContext,
  ) => Promise<readonly I[]> | readonly I[];
  /** The model name, sent to the tokenizer with each count. */
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
}

/** What {@linkcode compactionFilter} returns. */
export interface CompactionFilter<I> {
  /** For `run()`'s or a `Runner`'s `callModelInputFilter`. */
  readonly callModelInputFilter: (args: {
    readonly modelData: ModelInput<I>;
    readonly agent?: unknown;
  }) => Promise<ModelInput<I>>;
  /** `history` with every compaction so far in place: keep it as the next run's input. */
  compacted(history: readonly I[]): I[];
  /** How many times it compacted. */
  readonly compactions: number;
}

/**
 * Creates a `callModelInputFilter` for the OpenAI Agents SDK that compacts a
 * run's input before the window fills. Before each model call it counts the
 * input (the agent's instructions, its function tools and the items, as
 * `OpenAIChatCompletionsModel` sends them) and, when W - P < R, calls
 * `compact` and sends what it returns. Each compaction is remembered: a
 * later call or run whose input starts with the items it replaced gets the
 * replacement instead. While `compact` runs, the filter passes its own
 * summary run through untouched.
 *
 * @param options The window, context length, backend, and how to compact.
 * @returns The filter, and the compacted history.
 * @throws {RangeError} When the options are invalid.
 * @throws {TypeError} When `compact` is not a function.
 *
 * @example With run()
 * ```ts ignore
 * import { Agent, run, type AgentInputItem } from "@openai/agents";
 * import { compactionFilter } from "@incontext/incontext/openai-agents";
 *
 * const compaction = compactionFilter<AgentInputItem>({
 *   window: 55705,
 *   contextLength: 65536,
 *   backend,
 *   compact: async (input) => {
 *     const summary = await run(summariser, input);
 *     return [{ role: "user", content: String(summary.finalOutput) }];
 *   },
 * });
 * const result = await run(agent, history, { callModelInputFilter: compaction.callModelInputFilter });
 * history = compaction.compacted(result.history);
 * ```
 */
export function compactionFilter<I>(
  options: CompactionFilterOptions<I>,
): CompactionFilter<I> {
  const { compact, window, contextLength, minOutputTokens = 4096 } = options;
  const what = "create the compaction filter";
  requireInteger(window, { what, name: "window", min: 1 });
  requireInteger(contextLength, { what, name: "contextLength", min: window });
  requireInteger(minOutputTokens, { what, name: "minOutputTokens", min: 1 });
  if (typeof compact !== "function") {
    throw new TypeError(`Cannot ${what} as 'compact' must be a function`);
  }
  const cuts = new Cuts<I>();
  let compacting = false;

  async function callModelInputFilter(
    { modelData, agent }: {
      readonly modelData: ModelInput<I>;
      readonly agent?: unknown;
    },
  ): Promise<ModelInput<I>> {
    // The host's summary run, made from `compact`: left as it is.
    if (compacting) return modelData;
    const input = cuts.apply(modelData.input);
    const converted = itemsToChat(input);
    const tools = agentTools(agent);
    const check = await shouldCompress(converted.messages, {
      ...options,
      window,
      ...(tools === undefined ? {} : { tools }),
      ...(modelData.instructions ? { system: modelData.instructions } : {}),
    });
    if (!check.compress) return { ...modelData, input };
    const reasons = [check.reason, converted.inexact].filter((why) =>
      why !== undefined
    );
    compacting = true;
    let replacement: readonly I[];
    try {
      replacement = await compact([...input], {
        promptTokens: check.promptTokens!,
        window,
        contextLength,
        exact: reasons.length === 0,
        ...(reasons.length === 0 ? {} : { reason: reasons.join("; ") }),
      });
    } finally {
      compacting = false;
    }
    if (!Array.isArray(replacement)) {
      throw new TypeError(
        "Cannot compact the input as 'compact' did not return an array of items",
      );
    }
    cuts.add(input, replacement);
    return { ...modelData, input: [...replacement] };
  }

  return {
    callModelInputFilter,
    compacted: (history) => cuts.apply(history),
    get compactions() {
      return cuts.size;
    },
  };
}
