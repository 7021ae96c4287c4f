// Covers: src/backends/vllm/vllm_backend.ts, src/core/budget.ts, src/cache/mod.ts
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { budget } from "../../../mod.ts";
import { createCountCache, sharedCountCache } from "../../../src/cache/mod.ts";
import { VllmBackend } from "../../../src/backends/vllm/mod.ts";
import { backends, loadConfig } from "../../../src/config/mod.ts";
import {
  type FakeVllmFault,
  serveFakeVllmTokenizer,
} from "../../../src/testing/mod.ts";

const CONTEXT = 65536;
const WINDOW = 55705;

function request(text: string) {
  return {
    model: "qwen",
    max_tokens: 65536,
    messages: [{ role: "user", content: text }],
  };
}

Deno.test("budget() with the vLLM backend counts through a worker cache", async (t) => {
  await using server = await serveFakeVllmTokenizer({
    maxModelLen: CONTEXT,
    countTokens: () => 1705,
  });
  await using cache = createCountCache();
  const backend = new VllmBackend({
    url: server.url,
    cache,
    timeoutSeconds: 10,
  });
  const options = { window: WINDOW, contextLength: CONTEXT, backend };

  await t.step(
    "100 concurrent identical calls on a cold cache make one /tokenize request",
    async () => {
      const results = await Promise.all(
        Array.from({ length: 100 }, () => budget(request("hello"), options)),
      );
      strictEqual(server.requests.length, 1);
      strictEqual(cache.kind, "worker_threads");
      for (const result of results) {
        strictEqual(result.action, "set");
        strictEqual(result.source, "vllm-tokenize");
        strictEqual(result.maxTokens, WINDOW - 1705);
      }
    },
  );

  await t.step("a repeat is a cache hit", async () => {
    await budget(request("hello"), options);
    strictEqual(server.requests.length, 1);
    deepStrictEqual((await cache.stats()).entries, 1);
  });

  const faults: FakeVllmFault[] = [
    "refused",
    "slow",
    "http-500",
    "non-json",
    "non-object",
    "invalid-count",
    "missing-count",
    "negative-count",
    "fractional-count",
    "wrong-max-model-len",
  ];
  for (const fault of faults) {
    await t.step(
      `${fault}: falls back to the rough estimate minus the margin`,
      async () => {
        server.fault = fault;
        const faulty = new VllmBackend({
          url: server.url,
          cache,
          timeoutSeconds: 0.05,
        });
        const text = `fault ${fault} `.repeat(20);
        const result = await budget(request(text), {
          ...options,
          backend: faulty,
          estimate: () => 300,
        });
        strictEqual(result.action, "set");
        strictEqual(result.source, "rough-fallback");
        strictEqual(result.maxTokens, WINDOW - 300 - 1024);
        server.fault = "none";
        // failures are never cached: the next call counts exactly
        const again = await budget(request(text), options);
        strictEqual(again.source, "vllm-tokenize");
      },
    );
  }

  await t.step(
    "requests /tokenize cannot mirror fall back without an HTTP call",
    async () => {
      const before = server.requests.length;
      const result = await budget({
        ...request("x"),
        response_format: { type: "json_object" },
      }, options);
      strictEqual(result.source, "rough-fallback");
      strictEqual(server.requests.length, before);
    },
  );

  await t.step(
    "max_output_tokens is written as max_tokens for vLLM",
    async () => {
      const result = await budget(
        { messages: [{ role: "user", content: "y" }], max_output_tokens: 100 },
        options,
      );
      strictEqual(result.field, "max_tokens");
      ok(!("max_output_tokens" in result.request));
      strictEqual(result.request.max_tokens, 100);
    },
  );
});

Deno.test("the bundled vllm backend uses the process-wide cache by default", async () => {
  await using server = await serveFakeVllmTokenizer({ maxModelLen: CONTEXT });
  const shared = sharedCountCache();
  try {
    const config = loadConfig({ INCONTEXT_TOKENIZER_URL: server.url });
    const options = { window: WINDOW, contextLength: CONTEXT };
    await budget(request("shared"), {
      ...options,
      backend: await backends.load("vllm", config),
    });
    // a second backend instance hits the same cache: no second request
    await budget(request("shared"), {
      ...options,
      backend: new VllmBackend({ url: server.url }),
    });
    strictEqual(server.requests.length, 1);
    strictEqual((await shared.stats()).entries, 1);
    strictEqual(shared.kind, "worker_threads");
  } finally {
    await shared[Symbol.asyncDispose]();
  }
});
