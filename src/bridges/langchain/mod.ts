/**
 * The LangChain.js bridge: {@linkcode summarizationBudget} gives
 * `summarizationMiddleware` an exact `tokenCounter` and the `trigger` that
 * makes an agent summarise at exactly the call whose prompt would leave
 * less than R below the window. LangChain.js is a peer: this entry loads
 * none of its modules (it reads messages by their fields), and no other
 * entry loads this one.
 *
 * @example Counting LangChain.js messages
 * ```ts
 * import { summarizationBudget } from "@incontext/incontext/langchain";
 * import { FakeBackend } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const { tokenCounter, trigger } = summarizationBudget({
 *   window: 55705,
 *   contextLength: 65536,
 *   backend: new FakeBackend({ count: 52000 }),
 * });
 * strictEqual(trigger.tokens, 55705 - 4096 + 1);
 * strictEqual(await tokenCounter([{ role: "user", content: "Hi" }]), 52000);
 * ```
 *
 * @module
 */
export {
  type SummarizationBudget,
  summarizationBudget,
  type SummarizationBudgetOptions,
} from "./summarization.ts";
