/**
 * The main job until the proxy lands: budgets a sample request and prints
 * the decision.
 *
 * With no configuration it starts an embedded vLLM-protocol tokenize server
 * on port 0 and counts against it. With `INCONTEXT_TOKENIZER_URL` (and
 * `INCONTEXT_COMPRESSION_WINDOW_TOKENS`, `INCONTEXT_CONTEXT_LENGTH`) set, it
 * counts against your vLLM server instead.
 *
 *     npx --yes deno@2.9.6 task start
 */
import { configure, getConsoleSink } from "@logtape/logtape";
import {
  backends,
  budget,
  loadBackendModules,
  loadConfig,
  sharedCountCache,
} from "../mod.ts";
import { serveFakeVllmTokenizer } from "../testing.ts";

const SAMPLE = {
  model: "Qwen/Qwen3-8B",
  max_tokens: 65536,
  messages: [
    { role: "system", content: "You are a helpful coding agent." },
    { role: "user", content: "Summarise the design of incontext in one line." },
  ],
};

await configure({
  sinks: { console: getConsoleSink() },
  loggers: [
    { category: ["incontext"], lowestLevel: "info", sinks: ["console"] },
    {
      category: ["logtape", "meta"],
      lowestLevel: "warning",
      sinks: ["console"],
    },
  ],
});

const env = Deno.env.toObject();
const embedded = env.INCONTEXT_TOKENIZER_URL === undefined &&
    env.HERMES_VLLM_TOKENIZER_URL === undefined
  ? await serveFakeVllmTokenizer({ maxModelLen: 65536 })
  : undefined;
try {
  const config = loadConfig(
    embedded ? { ...env, INCONTEXT_TOKENIZER_URL: embedded.url } : env,
  );
  await loadBackendModules(config.backendModules, {
    importModule: (specifier) => import(specifier),
  });
  const backend = backends.one(config.backend, config);
  const result = await budget(SAMPLE, {
    window: config.compressionWindowTokens ?? 55705,
    contextLength: config.contextLength ?? 65536,
    backend,
    fallbackMarginTokens: config.fallbackMarginTokens,
    minOutputTokens: config.minOutputTokens,
  });
  console.log(JSON.stringify(
    {
      tokenizer: embedded ? "embedded vLLM-protocol server" : "configured",
      action: result.action,
      source: result.source,
      promptTokens: result.promptTokens,
      maxTokens: result.maxTokens,
      field: result.field,
      reason: result.reason,
    },
    null,
    2,
  ));
} finally {
  await sharedCountCache()[Symbol.asyncDispose]();
  await embedded?.[Symbol.asyncDispose]();
}
