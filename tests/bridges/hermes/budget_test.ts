// Covers: src/bridges/hermes/budget.ts, src/core/route.ts
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { loadConfig } from "../../../src/config/mod.ts";
import { ConfigError } from "../../../src/core/config_error.ts";
import { budget } from "../../../src/core/budget.ts";
import {
  type HermesAnswer,
  parseHermesSettings,
} from "../../../src/bridges/hermes/mod.ts";
import {
  answerSource,
  answerWarnings,
  hermesBudget,
  liveRoutes,
} from "../../../src/bridges/hermes/budget.ts";
import { FakeBackend } from "../../../src/testing/mod.ts";
import { ENV, home, standin } from "../../_kit/hermes_home.ts";

const URL_ENV = { INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize" };
const SETTINGS = parseHermesSettings(`
model:
  default: qwen3-coder
  provider: custom
  base_url: http://127.0.0.1:8787/v1
  context_length: 65536
compression:
  model_thresholds: { wide: 0.9 }
`);

Deno.test("hermesBudget() mirrors a named release without asking Hermes", async (t) => {
  // A Python that does not exist: nothing may be asked of it.
  const env = { ...URL_ENV, INCONTEXT_HERMES_PYTHON: "/nonexistent/python3" };
  await t.step(
    "each model its own window, the route of model.default only",
    async () => {
      const config = loadConfig({
        ...env,
        INCONTEXT_HERMES_RELEASE: "2026-09",
        INCONTEXT_HERMES_MODELS: "wide-model, other",
      });
      const result = await hermesBudget({ config, settings: SETTINGS, env });
      strictEqual(result.window, 55_705);
      strictEqual(result.watch, undefined);
      deepStrictEqual(result.routes, [
        {
          model: "qwen3-coder",
          window: 55_705,
          provider: "custom",
          baseUrl: "http://127.0.0.1:8787/v1",
        },
        { model: "wide-model", window: 58_982 },
        { model: "other", window: 55_705 },
      ]);
    },
  );
  await t.step("2026-07 gives 64,000 at 65,536", async () => {
    const config = loadConfig({ ...env, INCONTEXT_HERMES_RELEASE: "2026-07" });
    const result = await hermesBudget({ config, settings: SETTINGS, env });
    strictEqual(result.window, 64_000);
  });
  await t.step(
    "INCONTEXT_COMPRESSION_WINDOW_TOKENS for every route",
    async () => {
      const config = loadConfig({
        ...env,
        INCONTEXT_COMPRESSION_WINDOW_TOKENS: "50000",
        INCONTEXT_HERMES_MODELS: "other",
      });
      const result = await hermesBudget({ config, settings: SETTINGS, env });
      deepStrictEqual(result.routes?.map((route) => route.window), [
        50_000,
        50_000,
      ]);
      strictEqual(result.source, "INCONTEXT_COMPRESSION_WINDOW_TOKENS");
    },
  );
});

Deno.test("hermesBudget() refuses a window that leaves no room for F + R", async () => {
  await using dir = await home({
    model: { default: "tiny", context_length: 8000 },
  });
  const config = loadConfig({
    ...URL_ENV,
    INCONTEXT_HERMES_CONFIG: dir.config,
  });
  try {
    await hermesBudget({ config, settings: SETTINGS, env: ENV });
    throw new Error("expected a ConfigError");
  } catch (error) {
    ok(error instanceof ConfigError, String(error));
    deepStrictEqual(error.issues, [{
      variable: `INCONTEXT_HERMES_CONFIG (window ${
        standin(8000, 0.5)
      } of model "tiny")`,
      rule:
        "must exceed INCONTEXT_FALLBACK_MARGIN_TOKENS + INCONTEXT_MIN_OUTPUT_TOKENS",
    }]);
  }
});

const FROM_AGENT = {
  window: 40_000,
  contextLength: 65_536,
  source: "agent",
  file: "/venv/site-packages/run_agent.py",
} as const;

const ANSWER: HermesAnswer = {
  ...FROM_AGENT,
  hermesVersion: "0.19.0",
  versionSource: "hermes-agent distribution metadata",
  model: "",
  provider: "",
  baseUrl: "",
  compressionEnabled: true,
  maxTokens: undefined,
  models: { "": FROM_AGENT },
  python: { command: "python3", source: "python3 on PATH" },
};

Deno.test("liveRoutes() follows Hermes' answer, and budgets everything without a model", () => {
  strictEqual(liveRoutes(ANSWER, {}), undefined);
  deepStrictEqual(liveRoutes(ANSWER, { model: "m" }), [
    { model: "m", window: 40_000 },
  ]);
});

Deno.test("answerSource() and answerWarnings() say where each W came from", async (t) => {
  await t.step("Hermes' agent: no warning", () => {
    strictEqual(
      answerSource(ANSWER),
      "Hermes 0.19.0 agent: run_agent.AIAgent's context_compressor (/venv/site-packages/run_agent.py; version from hermes-agent distribution metadata; Python: python3 on PATH)",
    );
    deepStrictEqual(answerWarnings({ ...ANSWER, selfCheck: 40_000 }), []);
  });
  const fallback = {
    ...FROM_AGENT,
    source: "compressor",
    file: "/venv/site-packages/agent/context_compressor.py",
    fallback: "network",
    wiring: "0.19",
  } as const;
  await t.step("the compressor instead, and why", () => {
    strictEqual(
      answerSource({ ...ANSWER, ...fallback, models: { "": fallback } }),
      "Hermes 0.19.0 ContextCompressor built as 0.19's init_agent() does, not its agent: building it tried to reach the network, e.g. to look up a context length: name the model's context_length under custom_providers (/venv/site-packages/agent/context_compressor.py; version from hermes-agent distribution metadata; Python: python3 on PATH)",
    );
    const [warning, ...more] = answerWarnings({
      ...ANSWER,
      models: {
        "": FROM_AGENT,
        other: { ...fallback, fallback: "RuntimeError" },
      },
    });
    deepStrictEqual(more, []);
    deepStrictEqual(warning?.properties, {
      model: '"other"',
      reason: "building it raised RuntimeError",
      window: 40_000,
      wiring: "0.19",
    });
  });
  await t.step("a self-check that disagrees names both numbers", () => {
    const [warning] = answerWarnings({
      ...ANSWER,
      models: { m: { ...FROM_AGENT, selfCheck: 39_000 } },
    });
    ok(warning?.message.startsWith("hermes self-check"), warning?.message);
    deepStrictEqual(warning?.properties, {
      model: '"m"',
      holder: "agent",
      window: 40_000,
      check: 39_000,
    });
  });
});

Deno.test("budget() matches provider and base URL only where the host names a target", async (t) => {
  const routes = [{
    model: "qwen3-coder",
    provider: "custom",
    baseUrl: "http://127.0.0.1:8787/v1",
    window: 40_000,
  }];
  const request = { model: "qwen3-coder", messages: [], max_tokens: 65536 };
  const options = {
    window: 50_000,
    contextLength: 65_536,
    backend: new FakeBackend({ count: 1000 }),
    routes,
  };
  await t.step("no target: the model decides", async () => {
    strictEqual((await budget(request, options)).maxTokens, 39_000);
  });
  await t.step("the same base URL, normalised", async () => {
    const result = await budget(request, {
      ...options,
      target: { provider: "Custom", baseUrl: "http://127.0.0.1:8787/v1/" },
    });
    strictEqual(result.maxTokens, 39_000);
  });
  await t.step("another provider or base URL passes unchanged", async () => {
    const provider = await budget(request, {
      ...options,
      target: { provider: "openrouter" },
    });
    strictEqual(provider.action, "unchanged");
    ok(provider.reason.endsWith("outside the budgeted route (provider)"));
    const baseUrl = await budget(request, {
      ...options,
      target: { baseUrl: "http://127.0.0.1:9000/v1" },
    });
    ok(baseUrl.reason.endsWith("outside the budgeted route (base URL)"));
  });
});
