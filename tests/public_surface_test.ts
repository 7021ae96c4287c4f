import { deepStrictEqual, strictEqual } from "node:assert/strict";
import * as root from "../mod.ts";
import {
  documentedSurface,
  isValue,
  packageExports,
  sharedNames,
} from "./_kit/public_surface.ts";

const ROOT = new URL("../", import.meta.url);

/**
 * Every name each entry documents (`deno doc`), types included. A change to
 * the public surface must be deliberate: update this list with it.
 */
const EXPECTED: Readonly<Record<string, readonly string[]>> = {
  ".": [
    "Backend",
    "BudgetOptions",
    "BudgetResult",
    "BudgetRoute",
    "BudgetTarget",
    "CapField",
    "CapReading",
    "ComputeMaxTokensOptions",
    "ContextLengthMismatchError",
    "CountCheck",
    "CountError",
    "CountOptions",
    "CountResult",
    "Estimator",
    "IMAGE_TOKENS",
    "JsonObject",
    "OutputFieldOptions",
    "OutputLimitOptions",
    "ReadCapsOptions",
    "RequestKind",
    "TemplateRejectedError",
    "VERSION",
    "budget",
    "compressionPressure",
    "computeMaxTokens",
    "estimateTextTokens",
    "roughEstimate",
  ],
  "./vllm": [
    "HttpCountOptions",
    "VllmBackend",
    "VllmBackendOptions",
    "vllmFromConfig",
  ],
  "./local": ["LocalBackend", "LocalBackendOptions", "localFromConfig"],
  "./config": [
    "BackendConfig",
    "BackendFactory",
    "BackendPluginOptions",
    "BackendRegistry",
    "BudgetConfig",
    "ChainConfig",
    "Config",
    "ConfigError",
    "ConfigIssue",
    "DuplicateBackendError",
    "HermesConfig",
    "LoadBackendModulesOptions",
    "LoadConfigOptions",
    "LogConfig",
    "PluginConfig",
    "ProxyConfig",
    "ReplicaConfig",
    "ServerConfig",
    "UnknownBackendError",
    "backends",
    "createBackendRegistry",
    "loadBackendModules",
    "loadConfig",
  ],
  "./cache": [
    "COUNT_CACHE_CORE",
    "CountCache",
    "CountCacheCore",
    "CountCacheKind",
    "CountCacheOptions",
    "CountCacheStats",
    "CountTier",
    "EngineCall",
    "countCacheKey",
    "createCountCache",
    "sharedCountCache",
  ],
  "./count-worker": [],
  "./fetch": [
    "BridgeOptions",
    "BudgetedFetchOptions",
    "DecisionRequest",
    "ExhaustedPolicy",
    "budgetedFetch",
  ],
  "./middleware": ["BudgetMiddleware", "Next", "budgetMiddleware"],
  "./preflight": [
    "CompressCheck",
    "ConversationShape",
    "PreflightInput",
    "PreflightOptions",
    "PreflightResult",
    "ShouldCompressOptions",
    "preflight",
    "shouldCompress",
  ],
  "./exhausted": [
    "ContextWindowExhaustedError",
    "ContextWindowExhaustion",
    "isContextWindowExhausted",
  ],
  "./ai-sdk": [
    "BudgetedModelMiddlewareOptions",
    "CompactionContext",
    "CompactionStep",
    "CompactionStepOptions",
    "GenerateResultLike",
    "ModelCallParams",
    "ModelDecision",
    "ModelLike",
    "ModelMiddleware",
    "ProviderMetadataLike",
    "StepInput",
    "StreamResultLike",
    "budgetedModelMiddleware",
    "compactionStep",
  ],
  "./langchain": [
    "SummarizationBudget",
    "SummarizationBudgetOptions",
    "summarizationBudget",
  ],
  "./openai-agents": [
    "CompactionFilter",
    "CompactionFilterOptions",
    "FilterCompactionContext",
    "ModelInput",
    "compactionFilter",
  ],
  "./hermes": [
    "AskHermesOptions",
    "HERMES_RELEASES",
    "HermesAnswer",
    "HermesModelWindow",
    "HermesPython",
    "HermesRelease",
    "HermesSettings",
    "HermesWindowOptions",
    "HermesWindowSource",
    "HermesWindowWatch",
    "WatchHermesOptions",
    "askHermes",
    "hermesWindow",
    "loadHermesSettings",
    "parseHermesSettings",
    "resolveWindow",
    "watchHermesWindow",
  ],
  "./proxy": [
    "BackendChain",
    "BackendChainOptions",
    "ExactFetch",
    "ExactFetchOptions",
    "LiveBudget",
    "ProxyHandler",
    "ProxyOptions",
    "ProxyReporter",
    "ProxyRequestInfo",
    "Readiness",
    "ReadinessOptions",
    "ReadinessProbe",
    "TokenizerReadiness",
    "createExactFetch",
    "createProxyHandler",
  ],
  "./cli": ["MAIN_HELP", "runCli"],
  "./testing": [
    "BAD_ANSWERS",
    "BackendConformanceOptions",
    "CONFORMANCE_MARKER",
    "ConformanceCase",
    "CountCacheForTestingOptions",
    "FakeAnthropic",
    "FakeAnthropicFault",
    "FakeAnthropicHandler",
    "FakeAnthropicOptions",
    "FakeBackend",
    "FakeBackendOptions",
    "FakeGemini",
    "FakeGeminiFault",
    "FakeGeminiHandler",
    "FakeGeminiOptions",
    "FakeLlamaCppFault",
    "FakeLlamaCppHandler",
    "FakeLlamaCppOptions",
    "FakeLlamaCppServer",
    "FakeLlamaCppState",
    "FakeOpenAI",
    "FakeOpenAIFault",
    "FakeOpenAIHandler",
    "FakeOpenAIOptions",
    "FakeOpenAIRequest",
    "FakeServerRequest",
    "FakeSglang",
    "FakeSglangFault",
    "FakeSglangHandler",
    "FakeSglangOptions",
    "FakeSglangRequest",
    "FakeSglangTokenize",
    "FakeTgiFault",
    "FakeTgiHandler",
    "FakeTgiOptions",
    "FakeTgiServer",
    "FakeTgiState",
    "FakeUpstream",
    "FakeUpstreamFault",
    "FakeUpstreamFaultMix",
    "FakeUpstreamHandler",
    "FakeUpstreamOptions",
    "FakeUpstreamRequest",
    "FakeVllmFault",
    "FakeVllmRequest",
    "FakeVllmTokenizer",
    "FakeVllmTokenizerHandler",
    "FakeVllmTokenizerOptions",
    "HttpBackendConformanceOptions",
    "HttpConformanceBackendOptions",
    "HttpConformanceServer",
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
  "./anchored": [
    "AnchorMatch",
    "AnchorStore",
    "AnchorStoreOptions",
    "AnchoredBackend",
    "AnchoredBackendOptions",
    "ConversationKeys",
    "Usage",
    "anchoredFromConfig",
    "recordResponseUsage",
  ],
  "./openai": [
    "HttpCountOptions",
    "OpenAIBackend",
    "OpenAIBackendOptions",
    "openAIFromConfig",
  ],
  "./sglang": [
    "HttpCountOptions",
    "SglangBackend",
    "SglangBackendOptions",
    "SglangOutputLimitOptions",
    "sglangFromConfig",
  ],
  "./anthropic": [
    "ANTHROPIC_DEFAULT_URL",
    "ANTHROPIC_VERSION",
    "AnthropicBackend",
    "AnthropicBackendOptions",
    "HttpCountOptions",
    "anthropicFromConfig",
  ],
  "./gemini": [
    "GEMINI_DEFAULT_URL",
    "GeminiBackend",
    "GeminiBackendOptions",
    "HttpCountOptions",
    "geminiFromConfig",
  ],
  "./llamacpp": [
    "HttpCountOptions",
    "LlamaCppBackend",
    "LlamaCppBackendOptions",
    "llamaCppFromConfig",
  ],
  "./tgi": [
    "HttpCountOptions",
    "TgiBackend",
    "TgiBackendOptions",
    "tgiFromConfig",
  ],
};

/**
 * The one name several entries document: the options every HTTP backend's
 * options extend, shown on each of their pages with the rest of its options.
 */
const SHARED: ReadonlyMap<string, readonly string[]> = new Map([
  ["HttpCountOptions", [
    "./vllm",
    "./openai",
    "./sglang",
    "./anthropic",
    "./gemini",
    "./llamacpp",
    "./tgi",
  ]],
]);

const surface = await documentedSurface(ROOT);

Deno.test("each entry documents exactly the names pinned here", () => {
  deepStrictEqual([...surface.keys()], Object.keys(EXPECTED));
  for (const [entry, names] of surface) {
    deepStrictEqual(
      names.map(({ name }) => name).sort(),
      EXPECTED[entry],
      entry,
    );
  }
});

Deno.test("each entry exports at run time exactly the values it documents", async () => {
  const exports = await packageExports(ROOT);
  for (const [entry, file] of Object.entries(exports)) {
    const module = await import(new URL(file, ROOT).href);
    const values = surface.get(entry)!.filter(isValue).map(({ name }) => name);
    deepStrictEqual(Object.keys(module).sort(), values.sort(), entry);
  }
});

Deno.test("each name has one home entry: no other entry exports it again", () => {
  deepStrictEqual(sharedNames(surface), SHARED);
});

Deno.test("VERSION matches deno.json", async () => {
  const manifest = JSON.parse(
    await Deno.readTextFile(new URL("../deno.json", import.meta.url)),
  );
  strictEqual(root.VERSION, manifest.version);
  strictEqual(manifest.name, "@incontext/incontext");
});
