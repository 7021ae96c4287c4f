/**
 * vLLM's request rules, release by release: which fields a `/tokenize` or
 * completion payload carries, how vLLM reads a cap, the output limit it
 * derives, and its tokenizer modes. Light: it loads no template or tokenizer
 * module, so an HTTP backend that sends vLLM's payloads can use it alone.
 *
 * @example The rules of a vLLM release
 * ```ts
 * import { laxPositiveInteger, vllmRules } from "@incontext/engine/vllm";
 * import { strictEqual } from "node:assert/strict";
 *
 * strictEqual(vllmRules("0.20.0").release, "0.20.0");
 * strictEqual(laxPositiveInteger("512"), 512);
 * ```
 *
 * @module
 */
export {
  NEWEST_VLLM_RELEASE,
  OLDEST_VLLM_RELEASE,
  parseVllmVersion,
  type ReasoningRule,
  type VllmRules,
  vllmRules,
} from "./release.ts";
export {
  assertMirrorable,
  buildCompletionPayload,
  buildTokenizePayload,
  dependsOnRelease,
  isMultimodal,
  maxTokenizeResponseBytes,
  transferredPromptLength,
  truncationLimit,
  vllmOutputField,
  vllmOutputLimit,
} from "./payload.ts";
export { laxInteger, laxPositiveInteger } from "./caps.ts";
export { mistralChatBody } from "./mistral.ts";
export {
  type ParsedJson,
  parseJson,
  stringifyJson,
} from "../common/python_json.ts";
export {
  type RenderMode,
  resolveTokenizerMode,
  servedTokenizerMode,
  TOKENIZER_MODES,
  type TokenizerMode,
  tokenizerMode,
} from "./tokenizer_mode.ts";
