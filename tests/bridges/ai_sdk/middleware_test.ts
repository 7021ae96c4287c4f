// Covers: src/bridges/ai_sdk/middleware.ts, src/bridges/ai_sdk/call.ts
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { generateText, streamText, wrapLanguageModel } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { budgetedModelMiddleware } from "../../../src/bridges/ai_sdk/mod.ts";
import { isContextWindowExhausted } from "../../../src/bridges/exhausted.ts";
import type { DecisionRequest } from "../../../src/bridges/options.ts";
import { VllmBackend } from "../../../src/backends/vllm/mod.ts";
import { FakeBackend, serveFakeUpstream } from "../../../src/testing/mod.ts";

const W = 55705;
const C = 65536;

async function thrown(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to fail");
}

Deno.test("budgetedModelMiddleware() budgets each AI SDK call and carries the decision into providerMetadata", async (t) => {
  await using vllm = await serveFakeUpstream({ maxModelLen: C });
  const provider = createOpenAICompatible({
    name: "vllm",
    baseURL: vllm.baseUrl,
  });
  const requests: DecisionRequest[] = [];
  const model = wrapLanguageModel({
    model: provider("m"),
    middleware: budgetedModelMiddleware({
      window: W,
      contextLength: C,
      backend: new VllmBackend({ url: vllm.tokenizeUrl, cache: null }),
      onDecision: (_result, _kind, request) => void requests.push(request),
    }),
  });
  const sentCap = () =>
    (vllm.requests.filter((r) => r.path === "/v1/chat/completions").at(-1)!
      .body as { max_tokens: number }).max_tokens;
  await t.step("generateText: W - P, P the server's own count", async () => {
    const result = await generateText({
      model,
      system: "Be brief.",
      prompt: "Hi",
      maxRetries: 0,
      headers: { "x-request-id": "turn-1" },
    });
    const decision = result.providerMetadata!.incontext!;
    strictEqual(decision.action, "set");
    strictEqual(decision.source, "vllm-tokenize");
    strictEqual(decision.promptTokens, result.usage.inputTokens);
    strictEqual(decision.maxTokens, W - result.usage.inputTokens!);
    strictEqual(sentCap(), decision.maxTokens);
    strictEqual(decision.compaction, false);
    strictEqual(requests.at(-1)!.id, "turn-1");
  });
  await t.step("a smaller cap of the caller's is kept", async () => {
    const result = await generateText({
      model,
      prompt: "Hi",
      maxOutputTokens: 300,
      maxRetries: 0,
    });
    strictEqual(result.providerMetadata!.incontext!.maxTokens, 300);
    strictEqual(sentCap(), 300);
  });
  await t.step("streamText: the decision on the finish part", async () => {
    const result = streamText({ model, prompt: "Hi", maxRetries: 0 });
    await result.consumeStream();
    const metadata = await result.providerMetadata;
    strictEqual(metadata!.incontext!.action, "set");
    strictEqual(metadata!.incontext!.maxTokens, sentCap());
  });
});

Deno.test("budgetedModelMiddleware() never sends a cap below min(caller's cap, R), and throws the overflow without a call", async () => {
  await using vllm = await serveFakeUpstream({ maxModelLen: C });
  const provider = createOpenAICompatible({
    name: "vllm",
    baseURL: vllm.baseUrl,
  });
  const wrapped = (count: number, onExhausted?: "reject") =>
    wrapLanguageModel({
      model: provider("m"),
      middleware: budgetedModelMiddleware({
        window: W,
        contextLength: C,
        backend: new FakeBackend({ count }),
        ...(onExhausted ? { onExhausted } : {}),
      }),
    });
  const clamped = await generateText({
    model: wrapped(W - 100),
    prompt: "Hi",
    maxRetries: 0,
  });
  deepStrictEqual(
    [
      clamped.providerMetadata!.incontext!.action,
      clamped.providerMetadata!.incontext!.maxTokens,
    ],
    ["compress", 4096],
  );
  const calls = vllm.requests.length;
  for (const model of [wrapped(C - 100), wrapped(W - 100, "reject")]) {
    const error = await thrown(() =>
      generateText({ model, prompt: "Hi", maxRetries: 0 })
    );
    ok(isContextWindowExhausted(error), String(error));
    strictEqual((error as Error).name, "ContextWindowExhaustedError");
  }
  strictEqual(vllm.requests.length, calls, "the model server was not called");
});
