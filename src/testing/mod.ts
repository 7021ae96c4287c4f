/**
 * Test doubles for code that uses incontext: an in-memory backend, fake
 * servers of each counting protocol on port 0 with fault modes, and the
 * conformance suites a backend runs: the contract's, and, for a backend that
 * counts over HTTP, the HTTP cases.
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
export { FakeBackend } from "./fake_backend.ts";
export type { FakeBackendOptions } from "./fake_backend.ts";
export {
  createFakeVllmTokenizerHandler,
  serveFakeVllmTokenizer,
} from "./fake_vllm_server.ts";
export type {
  FakeVllmFault,
  FakeVllmRequest,
  FakeVllmTokenizer,
  FakeVllmTokenizerHandler,
  FakeVllmTokenizerOptions,
} from "./fake_vllm_server.ts";
export {
  backendConformanceCases,
  CONFORMANCE_MARKER,
} from "./backend_conformance.ts";
export type {
  BackendConformanceOptions,
  ConformanceCase,
} from "./backend_conformance.ts";
export {
  BAD_ANSWERS,
  httpBackendConformanceCases,
} from "./http_backend_conformance.ts";
export type {
  HttpBackendConformanceOptions,
  HttpConformanceBackendOptions,
  HttpConformanceServer,
} from "./http_backend_conformance.ts";
export {
  createCountCacheForTesting,
  terminateCountWorkerForTesting,
} from "./count_cache.ts";
export type { CountCacheForTestingOptions } from "./count_cache.ts";
export {
  createFakeUpstreamHandler,
  serveFakeUpstream,
} from "./fake_upstream.ts";
export type {
  FakeUpstream,
  FakeUpstreamFault,
  FakeUpstreamFaultMix,
  FakeUpstreamHandler,
  FakeUpstreamOptions,
  FakeUpstreamRequest,
} from "./fake_upstream.ts";
export {
  createFakeOpenAIHandler,
  serveFakeOpenAI,
} from "./fake_openai_server.ts";
export type {
  FakeOpenAI,
  FakeOpenAIFault,
  FakeOpenAIHandler,
  FakeOpenAIOptions,
  FakeOpenAIRequest,
} from "./fake_openai_server.ts";
export {
  createFakeSglangHandler,
  serveFakeSglang,
} from "./fake_sglang_server.ts";
export type {
  FakeSglang,
  FakeSglangFault,
  FakeSglangHandler,
  FakeSglangOptions,
  FakeSglangRequest,
  FakeSglangTokenize,
} from "./fake_sglang_server.ts";
export {
  createFakeAnthropicHandler,
  serveFakeAnthropic,
} from "./fake_anthropic_server.ts";
export type {
  FakeAnthropic,
  FakeAnthropicFault,
  FakeAnthropicHandler,
  FakeAnthropicOptions,
  FakeServerRequest,
} from "./fake_anthropic_server.ts";
export {
  createFakeGeminiHandler,
  serveFakeGemini,
} from "./fake_gemini_server.ts";
export type {
  FakeGemini,
  FakeGeminiFault,
  FakeGeminiHandler,
  FakeGeminiOptions,
} from "./fake_gemini_server.ts";
export {
  createFakeLlamaCppHandler,
  serveFakeLlamaCpp,
} from "./fake_llamacpp_server.ts";
export type {
  FakeLlamaCppFault,
  FakeLlamaCppHandler,
  FakeLlamaCppOptions,
  FakeLlamaCppServer,
  FakeLlamaCppState,
} from "./fake_llamacpp_server.ts";
export { createFakeTgiHandler, serveFakeTgi } from "./fake_tgi_server.ts";
export type {
  FakeTgiFault,
  FakeTgiHandler,
  FakeTgiOptions,
  FakeTgiServer,
  FakeTgiState,
} from "./fake_tgi_server.ts";
