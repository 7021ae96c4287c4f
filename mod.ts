/**
 * incontext gives every LLM request exactly the output budget still free
 * below the agent's compression window:
 *
 *     max_tokens = min(caller's cap, W - exact prompt tokens)
 *
 * counted by the inference server's own tokenizer and chat template (vLLM
 * `POST /tokenize`). When less than a useful minimum is left it tells the host
 * to compress instead of sending a tiny cap; when the exact count fails it
 * falls back to a rough estimate with a safety margin; when everything fails
 * it leaves the request untouched. It never logs prompts or secrets.
 *
 * This entry holds {@linkcode budget}, the {@linkcode Backend} contract and
 * its errors, and the arithmetic, and loads nothing else. Each backend has
 * its own entry (`./vllm`, `./local`, `./llamacpp`, ...), the count cache is
 * `./cache`, and choosing a backend from the environment is `./config`. Each
 * name has one home: the other entries name the contract's types and errors
 * but do not export them again, so they are imported from here.
 *
 * @example Budgeting a request with the vLLM backend
 * ```ts
 * import { budget } from "@incontext/incontext";
 * import { VllmBackend } from "@incontext/incontext/vllm";
 * import { createCountCache } from "@incontext/incontext/cache";
 * import { serveFakeVllmTokenizer } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * await using server = await serveFakeVllmTokenizer({ maxModelLen: 65536 });
 * await using cache = createCountCache({ inProcess: true });
 * const backend = new VllmBackend({ url: server.url, cache });
 * const result = await budget(
 *   { model: "qwen", max_tokens: 65536, messages: [{ role: "user", content: "Hello!" }] },
 *   { window: 55705, contextLength: 65536, backend },
 * );
 * strictEqual(result.action, "set");
 * strictEqual(result.request.max_tokens, 55705 - result.promptTokens!);
 * ```
 *
 * @module
 */
export { budget } from "./src/core/budget.ts";
export type {
  BudgetOptions,
  BudgetResult,
  BudgetRoute,
  BudgetTarget,
} from "./src/core/budget.ts";
export { compressionPressure, computeMaxTokens } from "./src/core/compute.ts";
export type { ComputeMaxTokensOptions } from "./src/core/compute.ts";
export {
  estimateTextTokens,
  IMAGE_TOKENS,
  roughEstimate,
} from "./src/core/estimate.ts";
export type { Estimator } from "./src/core/estimate.ts";
export { Backend } from "./src/core/backend.ts";
export type {
  CapField,
  CapReading,
  CountCheck,
  CountOptions,
  CountResult,
  JsonObject,
  OutputFieldOptions,
  OutputLimitOptions,
  ReadCapsOptions,
  RequestKind,
} from "./src/core/backend.ts";
export {
  ContextLengthMismatchError,
  CountError,
  TemplateRejectedError,
} from "./src/core/errors.ts";
export { VERSION } from "./src/core/version.ts";
