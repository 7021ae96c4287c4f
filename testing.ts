/**
 * Test doubles for code that uses incontext: an in-memory backend and a
 * vLLM-protocol tokenize server on port 0 with fault modes.
 *
 * @example A fake backend
 * ```ts
 * import { FakeBackend } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const backend = new FakeBackend({ count: 7 });
 * strictEqual(await backend.count({ messages: [] }, { contextLength: 1024 }), 7);
 * ```
 *
 * @module
 */
export { FakeBackend } from "./src/fake_backend.ts";
export type { FakeBackendOptions } from "./src/fake_backend.ts";
export {
  createFakeVllmTokenizerHandler,
  serveFakeVllmTokenizer,
} from "./src/fake_vllm_server.ts";
export type {
  FakeVllmFault,
  FakeVllmRequest,
  FakeVllmTokenizer,
  FakeVllmTokenizerHandler,
  FakeVllmTokenizerOptions,
} from "./src/fake_vllm_server.ts";
export {
  backendConformanceCases,
  CONFORMANCE_MARKER,
} from "./src/backend_conformance.ts";
export type {
  BackendConformanceOptions,
  ConformanceCase,
} from "./src/backend_conformance.ts";
export {
  createCountCacheForTesting,
  terminateCountWorkerForTesting,
} from "./src/count_cache_testing.ts";
// The types the doubles' API names, so that this entry stands on its own.
export type {
  Backend,
  CapField,
  CapReading,
  CountOptions,
  CountResult,
  JsonObject,
  OutputFieldOptions,
  OutputLimitOptions,
  ReadCapsOptions,
  RequestKind,
} from "./src/backend.ts";
export type {
  CountCache,
  CountCacheKind,
  CountCacheOptions,
  CountCacheStats,
} from "./src/count_cache.ts";
export {
  createFakeUpstreamHandler,
  serveFakeUpstream,
} from "./src/fake_upstream.ts";
export type {
  FakeUpstream,
  FakeUpstreamFault,
  FakeUpstreamFaultMix,
  FakeUpstreamHandler,
  FakeUpstreamOptions,
  FakeUpstreamRequest,
} from "./src/fake_upstream.ts";
export {
  createFakeOpenAIHandler,
  serveFakeOpenAI,
} from "./src/fake_openai_server.ts";
export type {
  FakeOpenAI,
  FakeOpenAIFault,
  FakeOpenAIHandler,
  FakeOpenAIOptions,
  FakeOpenAIRequest,
} from "./src/fake_openai_server.ts";
export {
  createFakeSglangHandler,
  serveFakeSglang,
} from "./src/fake_sglang_server.ts";
export type {
  FakeSglang,
  FakeSglangFault,
  FakeSglangHandler,
  FakeSglangOptions,
  FakeSglangRequest,
  FakeSglangTokenize,
} from "./src/fake_sglang_server.ts";
export {
  createFakeAnthropicHandler,
  serveFakeAnthropic,
} from "./src/fake_anthropic_server.ts";
export type {
  FakeAnthropic,
  FakeAnthropicFault,
  FakeAnthropicHandler,
  FakeAnthropicOptions,
  FakeServerRequest,
} from "./src/fake_anthropic_server.ts";
export {
  createFakeGeminiHandler,
  serveFakeGemini,
} from "./src/fake_gemini_server.ts";
export type {
  FakeGemini,
  FakeGeminiFault,
  FakeGeminiHandler,
  FakeGeminiOptions,
} from "./src/fake_gemini_server.ts";
export {
  createFakeLlamaCppHandler,
  serveFakeLlamaCpp,
} from "./src/fake_llamacpp_server.ts";
export type {
  FakeLlamaCppFault,
  FakeLlamaCppHandler,
  FakeLlamaCppOptions,
  FakeLlamaCppServer,
  FakeLlamaCppState,
} from "./src/fake_llamacpp_server.ts";
export { createFakeTgiHandler, serveFakeTgi } from "./src/fake_tgi_server.ts";
export type {
  FakeTgiFault,
  FakeTgiHandler,
  FakeTgiOptions,
  FakeTgiServer,
  FakeTgiState,
} from "./src/fake_tgi_server.ts";
