import { deepStrictEqual, strictEqual } from "node:assert/strict";
import * as cache from "../src/cache/mod.ts";
import * as config from "../src/config/mod.ts";
import * as root from "../mod.ts";
import * as testing from "../src/testing/mod.ts";
import * as vllm from "../src/backends/vllm/mod.ts";
import * as worker from "../src/cache/worker.ts";
import * as fetchEntry from "../src/bridges/fetch.ts";
import * as middleware from "../src/bridges/middleware.ts";
import * as preflight from "../src/bridges/preflight.ts";
import * as exhausted from "../src/bridges/exhausted.ts";
import * as aiSdk from "../src/bridges/ai_sdk/mod.ts";
import * as langchain from "../src/bridges/langchain/mod.ts";
import * as openaiAgents from "../src/bridges/openai_agents/mod.ts";
import * as hermes from "../src/bridges/hermes/mod.ts";
import * as proxy from "../src/proxy/mod.ts";
import * as local from "../src/backends/local/mod.ts";
import * as anchored from "../src/backends/anchored/mod.ts";
import * as anthropic from "../src/backends/anthropic/mod.ts";
import * as gemini from "../src/backends/gemini/mod.ts";
import * as openai from "../src/backends/openai/mod.ts";
import * as sglang from "../src/backends/sglang/mod.ts";
import * as llamacpp from "../src/backends/llamacpp/mod.ts";
import * as tgi from "../src/backends/tgi/mod.ts";
import * as cli from "../src/cli/mod.ts";

// A change to the public surface must be deliberate: update this list with it.
Deno.test("the export entries expose exactly the documented surface", () => {
  const surfaces: Record<string, object> = {
    root,
    vllm,
    config,
    cache,
    worker,
    testing,
    fetch: fetchEntry,
    middleware,
    preflight,
    exhausted,
    aiSdk,
    langchain,
    openaiAgents,
    hermes,
    proxy,
    local,
    anchored,
    anthropic,
    gemini,
    openai,
    sglang,
    llamacpp,
    tgi,
    cli,
  };
  const expected: Record<string, string[]> = {
    root: [
      "Backend",
      "ContextLengthMismatchError",
      "CountError",
      "IMAGE_TOKENS",
      "VERSION",
      "budget",
      "compressionPressure",
      "computeMaxTokens",
      "estimateTextTokens",
      "roughEstimate",
    ],
    vllm: [
      "ConfigError",
      "CountError",
      "TemplateRejectedError",
      "VllmBackend",
      "vllmFromConfig",
    ],
    config: [
      "ConfigError",
      "DuplicateBackendError",
      "UnknownBackendError",
      "backends",
      "createBackendRegistry",
      "loadBackendModules",
      "loadConfig",
    ],
    cache: [
      "COUNT_CACHE_CORE",
      "countCacheKey",
      "createCountCache",
      "sharedCountCache",
    ],
    worker: [],
    fetch: ["budgetedFetch"],
    middleware: ["budgetMiddleware"],
    preflight: ["preflight", "shouldCompress"],
    exhausted: ["ContextWindowExhaustedError", "isContextWindowExhausted"],
    aiSdk: ["budgetedModelMiddleware", "compactionStep"],
    langchain: ["summarizationBudget"],
    openaiAgents: ["compactionFilter"],
    proxy: [
      "BackendChain",
      "Readiness",
      "createExactFetch",
      "createProxyHandler",
    ],
    cli: ["MAIN_HELP", "runCli"],
    local: [
      "ConfigError",
      "CountError",
      "LocalBackend",
      "TemplateRejectedError",
      "localFromConfig",
    ],
    hermes: [
      "HERMES_RELEASES",
      "askHermes",
      "hermesWindow",
      "loadHermesSettings",
      "parseHermesSettings",
      "resolveWindow",
      "watchHermesWindow",
    ],
    anchored: [
      "AnchorStore",
      "AnchoredBackend",
      "CountError",
      "TemplateRejectedError",
      "anchoredFromConfig",
      "recordResponseUsage",
    ],
    anthropic: [
      "ANTHROPIC_DEFAULT_URL",
      "ANTHROPIC_VERSION",
      "AnthropicBackend",
      "ConfigError",
      "CountError",
      "anthropicFromConfig",
    ],
    gemini: [
      "ConfigError",
      "CountError",
      "GEMINI_DEFAULT_URL",
      "GeminiBackend",
      "geminiFromConfig",
    ],
    openai: ["CountError", "OpenAIBackend", "openAIFromConfig"],
    sglang: [
      "ConfigError",
      "CountError",
      "SglangBackend",
      "TemplateRejectedError",
      "sglangFromConfig",
    ],
    llamacpp: [
      "ConfigError",
      "CountError",
      "LlamaCppBackend",
      "TemplateRejectedError",
      "llamaCppFromConfig",
    ],
    tgi: [
      "ConfigError",
      "CountError",
      "TemplateRejectedError",
      "TgiBackend",
      "tgiFromConfig",
    ],
    testing: [
      "BAD_ANSWERS",
      "CONFORMANCE_MARKER",
      "FakeBackend",
      "backendConformanceCases",
      "createCountCacheForTesting",
      "createFakeAnthropicHandler",
      "createFakeGeminiHandler",
      "createFakeLlamaCppHandler",
      "createFakeOpenAIHandler",
      "createFakeSglangHandler",
      "createFakeTgiHandler",
      "createFakeUpstreamHandler",
      "createFakeVllmTokenizerHandler",
      "httpBackendConformanceCases",
      "serveFakeAnthropic",
      "serveFakeGemini",
      "serveFakeLlamaCpp",
      "serveFakeOpenAI",
      "serveFakeSglang",
      "serveFakeTgi",
      "serveFakeUpstream",
      "serveFakeVllmTokenizer",
      "terminateCountWorkerForTesting",
    ],
  };
  for (const [name, module] of Object.entries(surfaces)) {
    deepStrictEqual(Object.keys(module).sort(), expected[name], name);
  }
  const manifest = JSON.parse(
    Deno.readTextFileSync(new URL("../deno.json", import.meta.url)),
  );
  strictEqual(
    Object.keys(manifest.exports).length,
    Object.keys(surfaces).length,
    "every entry of deno.json's exports is pinned here",
  );
});

Deno.test("VERSION matches deno.json", async () => {
  const manifest = JSON.parse(
    await Deno.readTextFile(new URL("../deno.json", import.meta.url)),
  );
  strictEqual(root.VERSION, manifest.version);
  strictEqual(manifest.name, "@incontext/incontext");
});
