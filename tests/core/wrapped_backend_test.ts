// Covers: src/core/wrapped_backend.ts, src/proxy/timed_backend.ts
import { strictEqual } from "node:assert/strict";
import { VllmBackend } from "../../src/backends/vllm/mod.ts";
import { FakeBackend } from "../../src/testing/mod.ts";
import { TimedBackend } from "../../src/proxy/timed_backend.ts";

Deno.test("a wrapped backend answers every hook as the backend it wraps", async (t) => {
  const vllm = new VllmBackend({
    url: "http://127.0.0.1:1/tokenize",
    cache: null,
  });
  const timed = new TimedBackend(vllm, () => {});
  await t.step("source and the server's context length", () => {
    strictEqual(timed.source, "vllm-tokenize");
    strictEqual(timed.servedContext, "vLLM max_model_len");
    strictEqual(
      new TimedBackend(new FakeBackend({ count: 1 }), () => {}).servedContext,
      undefined,
    );
  });
  await t.step("caps and kinds", () => {
    const request = { model: "m", messages: [], max_tokens: 10 };
    strictEqual(timed.requestKind(request), vllm.requestKind(request));
    strictEqual(
      timed.outputBudgetField("max_tokens"),
      vllm.outputBudgetField("max_tokens"),
    );
    strictEqual(timed.coerceOutputBudget("12"), vllm.coerceOutputBudget("12"));
  });
  await t.step("the count, timed", async () => {
    const seen: string[] = [];
    const counted = new TimedBackend(
      new FakeBackend({ count: 42 }),
      (_seconds, outcome) => seen.push(outcome),
    );
    strictEqual(
      await counted.count({ messages: [] }, { contextLength: 8192 }),
      42,
    );
    strictEqual(seen.join(), "ok");
  });
});
