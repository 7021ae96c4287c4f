/**
 * The Vercel AI SDK bridge: {@linkcode budgetedModelMiddleware}, a
 * language-model middleware that budgets every call and carries each
 * decision into `providerMetadata.incontext`, and
 * {@linkcode compactionStep}, a `prepareStep` that compacts an agent's
 * conversation at exactly the step where less than R would be left below
 * the window. The AI SDK is a peer: this entry loads none of its modules
 * (its types are assignable to the shapes here), and no other entry loads
 * this one.
 *
 * @example An agent that compacts itself
 * ```ts ignore
 * import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
 * import { generateText, stepCountIs, wrapLanguageModel, type ModelMessage } from "ai";
 * import { VllmBackend } from "@incontext/incontext/vllm";
 * import { compactionStep } from "@incontext/incontext/ai-sdk";
 *
 * const vllm = createOpenAICompatible({ name: "vllm", baseURL: "http://127.0.0.1:8000/v1" });
 * const compaction = compactionStep<ModelMessage>({
 *   window: 55705,
 *   contextLength: 65536,
 *   backend: new VllmBackend({ url: "http://127.0.0.1:8000/tokenize" }),
 *   compact: async (messages) => {
 *     const { text } = await generateText({
 *       model,
 *       messages: [...messages, { role: "user", content: "Summarise the conversation so far." }],
 *     });
 *     return [{ role: "user", content: `Summary: ${text}` }];
 *   },
 * });
 * const model = wrapLanguageModel({ model: vllm("Qwen/Qwen3-8B"), middleware: compaction.middleware });
 * let history: ModelMessage[] = [{ role: "user", content: "Fix the failing test." }];
 * const result = await generateText({
 *   model,
 *   messages: history,
 *   prepareStep: compaction.prepareStep,
 *   stopWhen: stepCountIs(10),
 * });
 * history = compaction.compacted([...history, ...result.response.messages]);
 * ```
 *
 * @module
 */
export {
  budgetedModelMiddleware,
  type BudgetedModelMiddlewareOptions,
  type ModelDecision,
} from "./middleware.ts";
export {
  type CompactionContext,
  type CompactionStep,
  compactionStep,
  type CompactionStepOptions,
  type StepInput,
} from "./compaction.ts";
export type * from "./types.ts";
