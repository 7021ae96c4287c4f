/**
 * `compactionStep()`: compaction for AI SDK agents at exactly the step where
 * less than R would be left below the window. The host says how to compact;
 * the step counts each step's prompt exactly, compacts when it must, keeps
 * the cut for later steps and turns, and tells its own summary calls apart.
 *
 * @module
 */
import { validateBudgetOptions } from "../../core/budget_settings.ts";
import { shouldCompress } from "../preflight.ts";
import type { BridgeOptions } from "../options.ts";
import { createModelMiddleware } from "./middleware.ts";
import type { ModelMiddleware } from "./types.ts";
import { Cuts, sameMessages } from "../cuts.ts";

/** What the host's `compact` is told. */
export interface CompactionContext {
  /** P: the step's prompt tokens. */
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

/** Options for {@linkcode compactionStep}. */
export interface CompactionStepOptions<M> extends BridgeOptions {
  /**
   * How to compact: the messages to send in place of `messages`, such as a
   * summary of the older ones followed by the latest. A summary call made
   * here through the step's `middleware` (or through a `generateText` with
   * this `prepareStep`) is known as the compaction's own.
   */
  readonly compact: (
    messages: M[],
    context: CompactionContext,
  ) => Promise<readonly M[]> | readonly M[];
  /**
   * The tools in the OpenAI chat shape, for the count of the first step;
   * after it, the tools of each call through `middleware` are used.
   *
   * @default none until a call through `middleware`
   */
  readonly tools?: readonly unknown[];
  /** The model name, sent to the tokenizer with each count. */
  readonly model?: string;
}

/** One step, as `prepareStep` is given it. */
export interface StepInput<M> {
  /** The messages the step would send. */
  readonly messages: M[];
  /** The step's instructions (a string, or system messages). */
  readonly instructions?: unknown;
}

/** What {@linkcode compactionStep} returns. */
export interface CompactionStep<M> {
  /** For `generateText`, `streamText` or an Agent: the step's messages, compacted when due. */
  readonly prepareStep: (
    step: StepInput<M>,
  ) => Promise<{ messages: M[] } | undefined>;
  /** The budgeting middleware whose calls this compaction knows (`wrapLanguageModel()`). */
  readonly middleware: ModelMiddleware;
  /**
   * `history` with every compaction so far in place: keep it as the
   * conversation for the next turn.
   */
  compacted(history: readonly M[]): M[];
  /** How many times it compacted. */
  readonly compactions: number;
}

/**
 * Creates a compaction for AI SDK agents. Before each step its
 * `prepareStep` counts the prompt the step sends (messages, instructions,
 * tools, as the OpenAI-compatible provider sends them) and, when W - P < R,
 * calls `compact` and sends what it returns. Each compaction is remembered:
 * a later step or turn that starts with the messages it replaced gets the
 * replacement instead. While `compact` runs, `prepareStep` leaves the steps
 * of the host's summary call alone, and `middleware` marks their decisions
 * `compaction: true`.
 *
 * @param options The window, context length, backend, and how to compact.
 * @returns The step, its middleware, and the compacted history.
 * @throws {RangeError} When the options are invalid.
 * @throws {TypeError} When `compact` is not a function.
 *
 * @example Compacting an agent's conversation
 * ```ts ignore
 * import { generateText, stepCountIs, wrapLanguageModel, type ModelMessage } from "ai";
 * import { compactionStep } from "@incontext/incontext/ai-sdk";
 *
 * const compaction = compactionStep<ModelMessage>({
 *   window: 55705,
 *   contextLength: 65536,
 *   backend,
 *   compact: async (messages) => {
 *     const { text } = await generateText({ model, messages: [...messages, { role: "user", content: "Summarise." }] });
 *     return [{ role: "user", content: text }, ...messages.slice(-1)];
 *   },
 * });
 * const model = wrapLanguageModel({ model: vllm("qwen"), middleware: compaction.middleware });
 * const result = await generateText({ model, tools, messages, prepareStep: compaction.prepareStep, stopWhen: stepCountIs(8) });
 * ```
 */
export function compactionStep<M>(
  options: CompactionStepOptions<M>,
): CompactionStep<M> {
  validateBudgetOptions(options);
  const { compact } = options;
  if (typeof compact !== "function") {
    throw new TypeError(
      "Cannot create the compaction as 'compact' must be a function",
    );
  }
  const cuts = new Cuts<M>();
  let tools = options.tools;
  // Until a call through the middleware, only the `tools` option says which tools a step sends.
  let toolsKnown = options.tools !== undefined;
  let compacting = false;
  const middleware = createModelMiddleware(options, {
    compacting: () => compacting,
    sawTools: (seen) => {
      if (compacting) return;
      tools = Array.isArray(seen) ? seen : undefined;
      toolsKnown = true;
    },
  });
  const compacted = (history: readonly M[]) => cuts.apply(history);

  async function prepareStep(
    step: StepInput<M>,
  ): Promise<{ messages: M[] } | undefined> {
    // The host's summary call, made from `compact`: left as it is.
    if (compacting) return undefined;
    const messages = compacted(step.messages);
    const check = await shouldCompress(
      [...systemMessages(step.instructions), ...messages],
      {
        ...options,
        ...(tools === undefined ? {} : { tools }),
      },
    );
    if (!check.compress) {
      return sameMessages(messages, step.messages) ? undefined : { messages };
    }
    compacting = true;
    let replacement: readonly M[];
    try {
      replacement = await compact([...messages], {
        promptTokens: check.promptTokens!,
        window: options.window,
        contextLength: options.contextLength,
        ...exactness(check.reason, toolsKnown),
      });
    } finally {
      compacting = false;
    }
    if (!Array.isArray(replacement)) {
      throw new TypeError(
        "Cannot compact the conversation as 'compact' did not return an array of messages",
      );
    }
    cuts.add(messages, replacement);
    return { messages: [...replacement] };
  }

  return {
    prepareStep,
    middleware,
    compacted,
    get compactions() {
      return cuts.size;
    },
  };
}

/** Whether the count is exact, and why not: its own reason, or tools not yet seen. */
function exactness(
  reason: string | undefined,
  toolsKnown: boolean,
): { exact: boolean; reason?: string } {
  const why = [
    reason,
    toolsKnown
      ? undefined
      : "the tools are counted from the first call through the middleware on",
  ].filter((item) => item !== undefined);
  return why.length === 0
    ? { exact: true }
    : { exact: false, reason: why.join("; ") };
}

/** The instructions as the system messages the AI SDK sends first. */
function systemMessages(instructions: unknown): unknown[] {
  const list = Array.isArray(instructions) ? instructions : [instructions];
  return list.flatMap((item) => {
    if (typeof item === "string") return [{ role: "system", content: item }];
    if (typeof item === "object" && item !== null && "content" in item) {
      return [{
        role: "system",
        content: (item as { content: unknown }).content,
      }];
    }
    return [];
  });
}
