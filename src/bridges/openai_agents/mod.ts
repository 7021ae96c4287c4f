/**
 * The OpenAI Agents SDK bridge: {@linkcode compactionFilter}, a
 * `callModelInputFilter` that compacts a run's input at exactly the model
 * call whose prompt would leave less than R below the window. The Agents
 * SDK is a peer: this entry loads none of its modules (it reads the items
 * and the agent's tools by their fields), and no other entry loads this
 * one.
 *
 * @example Compacting when the window is full
 * ```ts
 * import { compactionFilter } from "@incontext/incontext/openai-agents";
 * import { FakeBackend } from "@incontext/incontext/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const compaction = compactionFilter({
 *   window: 55705,
 *   contextLength: 65536,
 *   backend: new FakeBackend({ count: 52000 }),
 *   compact: () => [{ role: "user", content: "Summary: the build fails." }],
 * });
 * const sent = await compaction.callModelInputFilter({
 *   modelData: { input: [{ role: "user", content: "Fix the build." }], instructions: "You fix builds." },
 * });
 * deepStrictEqual(sent.input, [{ role: "user", content: "Summary: the build fails." }]);
 * ```
 *
 * @module
 */
export {
  type CompactionFilter,
  compactionFilter,
  type CompactionFilterOptions,
  type FilterCompactionContext,
  type ModelInput,
} from "./filter.ts";
