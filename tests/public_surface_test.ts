import { deepStrictEqual, strictEqual } from "node:assert/strict";
import * as cache from "../src/count_cache.ts";
import * as config from "../src/config.ts";
import * as root from "../mod.ts";
import * as testing from "../testing.ts";
import * as vllm from "../src/vllm.ts";
import * as worker from "../src/count_worker.ts";
import * as fetchEntry from "../src/fetch.ts";
import * as middleware from "../src/middleware.ts";
import * as preflight from "../src/preflight.ts";
import * as hermes from "../src/hermes.ts";
import * as proxy from "../src/proxy.ts";
import * as local from "../src/local.ts";
import * as anchored from "../src/anchored.ts";
import * as anthropic from "../src/anthropic.ts";
import * as gemini from "../src/gemini.ts";
import * as openai from "../src/openai.ts";
import * as sglang from "../src/sglang.ts";
import * as llamacpp from "../src/llamacpp.ts";
import * as tgi from "../src/tgi.ts";

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
  };
  const expected: Record<string, string[]> = {
    root: [
      "Backend",
      "ConfigError",
      "CountError",
      "DuplicateBackendError",
      "IMAGE_TOKENS",
      "UnknownBackendError",
      "VERSION",
      "VllmBackend",
      "backends",
      "budget",
      "compressionPressure",
      "computeMaxTokens",
      "countCacheKey",
      "createBackendRegistry",
      "createCountCache",
      "estimateTextTokens",
      "loadBackendModules",
      "loadConfig",
      "roughEstimate",
      "sharedCountCache",
    ],
    vllm: ["VllmBackend"],
    config: ["ConfigError", "loadConfig"],
    cache: ["countCacheKey", "createCountCache", "sharedCountCache"],
    worker: [],
    fetch: ["budgetedFetch"],
    middleware: ["budgetMiddleware"],
    preflight: ["preflight"],
    proxy: ["createProxyHandler"],
    local: ["CountError", "LocalBackend", "TemplateRejectedError"],
    hermes: [
      "hermesWindow",
      "loadHermesSettings",
      "parseHermesSettings",
      "resolveWindow",
    ],
    anchored: [
      "AnchorStore",
      "AnchoredBackend",
      "anchoredFromConfig",
      "recordResponseUsage",
    ],
    anthropic: [
      "ANTHROPIC_DEFAULT_URL",
      "ANTHROPIC_VERSION",
      "AnthropicBackend",
      "anthropicFromConfig",
    ],
    gemini: ["GEMINI_DEFAULT_URL", "GeminiBackend", "geminiFromConfig"],
    openai: ["CountError", "OpenAIBackend", "openaiFromConfig"],
    sglang: [
      "CountError",
      "SglangBackend",
      "TemplateRejectedError",
      "sglangFromConfig",
    ],
    llamacpp: ["LlamaCppBackend", "llamacppFromConfig"],
    tgi: ["TgiBackend", "tgiFromConfig"],
    testing: [
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
});

Deno.test("VERSION matches deno.json", async () => {
  const manifest = JSON.parse(
    await Deno.readTextFile(new URL("../deno.json", import.meta.url)),
  );
  strictEqual(root.VERSION, manifest.version);
  strictEqual(manifest.name, "@incontext/incontext");
});
