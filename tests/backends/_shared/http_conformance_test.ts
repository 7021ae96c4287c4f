// Covers: src/backends/_shared/http_count.ts, src/backends/_shared/http_counter.ts, src/testing/http_backend_conformance.ts, src/backends/vllm/vllm_backend.ts, src/backends/llamacpp/llamacpp_backend.ts, src/backends/tgi/tgi_backend.ts, src/backends/sglang/sglang_backend.ts, src/backends/anthropic/anthropic_backend.ts, src/backends/gemini/gemini_backend.ts, src/backends/openai/openai_backend.ts
/**
 * The HTTP suite, the same cases for every backend that counts over HTTP,
 * each against a fake of its protocol: what they share is tested here once,
 * and each backend's own test holds what is its own.
 */
import type { JsonObject } from "../../../src/core/backend.ts";
import { CONFORMANCE_MARKER } from "../../../src/testing/backend_conformance.ts";
import {
  httpBackendConformanceCases,
  type HttpBackendConformanceOptions,
} from "../../../src/testing/http_backend_conformance.ts";
import { serveFakeVllmTokenizer } from "../../../src/testing/fake_vllm_server.ts";
import { serveFakeLlamaCpp } from "../../../src/testing/fake_llamacpp_server.ts";
import { serveFakeTgi } from "../../../src/testing/fake_tgi_server.ts";
import { serveFakeSglang } from "../../../src/testing/fake_sglang_server.ts";
import { serveFakeAnthropic } from "../../../src/testing/fake_anthropic_server.ts";
import { serveFakeGemini } from "../../../src/testing/fake_gemini_server.ts";
import { serveFakeOpenAI } from "../../../src/testing/fake_openai_server.ts";
import { VllmBackend } from "../../../src/backends/vllm/mod.ts";
import { LlamaCppBackend } from "../../../src/backends/llamacpp/mod.ts";
import { TgiBackend } from "../../../src/backends/tgi/mod.ts";
import { SglangBackend } from "../../../src/backends/sglang/mod.ts";
import { AnthropicBackend } from "../../../src/backends/anthropic/mod.ts";
import { GeminiBackend } from "../../../src/backends/gemini/mod.ts";
import { OpenAIBackend } from "../../../src/backends/openai/mod.ts";
import { captureLogs } from "../../_kit/log_capture.ts";

const CHAT: JsonObject = {
  model: "conformance-model",
  messages: [
    { role: "system", content: "You are a terse assistant." },
    { role: "user", content: `Say hello. ${CONFORMANCE_MARKER}` },
  ],
};

/** The bad answers of the fakes that answer with one JSON document per endpoint. */
const BODY_FAULTS = [
  "http-429",
  "http-500",
  "http-503",
  "non-json",
  "truncated-json",
  "non-object",
  "reset",
  "oversized",
];

const SGLANG_DIR = new URL("../../fixtures/model_folder/", import.meta.url)
  .pathname;

/** Runs the suite for one backend, each case a step, its logs captured. */
async function runSuite(
  t: Deno.TestContext,
  options: Omit<HttpBackendConformanceOptions, "logs">,
): Promise<void> {
  await using logs = await captureLogs();
  const cases = httpBackendConformanceCases({
    ...options,
    logs: () => logs.lines,
  });
  for (const c of cases) {
    await t.step({ name: c.name, ignore: c.skip !== undefined, fn: c.run });
  }
}

Deno.test("VllmBackend passes the HTTP suite", async (t) => {
  await runSuite(t, {
    serve: () => serveFakeVllmTokenizer({ maxModelLen: 8192 }),
    backend: (options) => new VllmBackend(options),
    request: CHAT,
    contextLength: 8192,
    badAnswers: BODY_FAULTS,
  });
});

Deno.test("LlamaCppBackend passes the HTTP suite", async (t) => {
  await runSuite(t, {
    serve: (options) => serveFakeLlamaCpp({ nCtx: 8192, ...options }),
    backend: (options) => new LlamaCppBackend(options),
    request: CHAT,
    contextLength: 8192,
    badAnswers: BODY_FAULTS,
  });
});

Deno.test("TgiBackend passes the HTTP suite", async (t) => {
  await runSuite(t, {
    serve: (options) => serveFakeTgi({ maxTotalTokens: 8192, ...options }),
    backend: (options) => new TgiBackend(options),
    request: CHAT,
    contextLength: 8192,
    badAnswers: BODY_FAULTS,
  });
});

Deno.test("SglangBackend passes the HTTP suite", async (t) => {
  const made: SglangBackend[] = [];
  try {
    await runSuite(t, {
      serve: () => serveFakeSglang(),
      backend: (options) => {
        const backend = new SglangBackend({ ...options, dir: SGLANG_DIR });
        made.push(backend);
        return backend;
      },
      request: CHAT,
      contextLength: 8192,
      badAnswers: [
        "http-429",
        "http-500",
        "http-503",
        "non-json",
        "non-object",
      ],
    });
  } finally {
    for (const backend of made) await backend[Symbol.asyncDispose]();
  }
});

Deno.test("AnthropicBackend passes the HTTP suite", async (t) => {
  await runSuite(t, {
    serve: (options) => serveFakeAnthropic(options),
    backend: (options) => new AnthropicBackend(options),
    request: { ...CHAT, model: "claude-sonnet-4-5" },
    contextLength: 200_000,
    badAnswers: [
      "http-401",
      "http-429",
      "http-500",
      "http-529",
      "non-json",
      "truncated-json",
      "non-object",
      "reset",
      "oversized",
    ],
    keyHeader: (key) => ["x-api-key", key],
  });
});

Deno.test("GeminiBackend passes the HTTP suite", async (t) => {
  await runSuite(t, {
    serve: (options) => serveFakeGemini(options),
    backend: (options) =>
      new GeminiBackend({ ...options, model: "gemini-2.5-flash" }),
    request: { ...CHAT, model: "gemini-2.5-flash" },
    contextLength: 1_048_576,
    badAnswers: [
      "http-400",
      "http-403",
      "http-429",
      "http-500",
      "http-503",
      "non-json",
      "truncated-json",
      "non-object",
      "reset",
      "oversized",
    ],
    keyHeader: (key) => ["x-goog-api-key", key],
  });
});

Deno.test("OpenAIBackend passes the HTTP suite with Responses requests", async (t) => {
  await runSuite(t, {
    serve: (options) => serveFakeOpenAI(options),
    backend: (options) => new OpenAIBackend(options),
    request: {
      model: "gpt-5",
      instructions: "You are a terse assistant.",
      input: [{ role: "user", content: `Say hello. ${CONFORMANCE_MARKER}` }],
    },
    kind: "responses",
    contextLength: 128_000,
    badAnswers: ["http-429", "http-500", "http-503", "non-json", "non-object"],
  });
});
