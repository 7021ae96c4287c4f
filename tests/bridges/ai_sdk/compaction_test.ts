import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import {
  generateText,
  jsonSchema,
  type ModelMessage,
  stepCountIs,
  streamText,
  tool,
  wrapLanguageModel,
} from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { compactionStep } from "../../../src/bridges/ai_sdk/mod.ts";
import { VllmBackend } from "../../../src/backends/vllm/mod.ts";
import { FakeBackend, serveFakeUpstream } from "../../../src/testing/mod.ts";

const C = 16384;
const W = 12000;
const R = 1024;
const F = 512;
/** About 1,500 tokens to the fake's count. */
const TURN = "x".repeat(6000);

interface Seen {
  readonly action: string;
  readonly maxTokens?: number;
  readonly compaction: boolean;
}

Deno.test("compactionStep() compacts an AI SDK agent loop each time it reaches W, with no failed run", async () => {
  await using vllm = await serveFakeUpstream({
    maxModelLen: C,
    toolCallEvery: 2,
  });
  const provider = createOpenAICompatible({
    name: "vllm",
    baseURL: vllm.baseUrl,
  });
  const seen: Seen[] = [];
  const compaction = compactionStep<ModelMessage>({
    window: W,
    contextLength: C,
    minOutputTokens: R,
    fallbackMarginTokens: F,
    backend: new VllmBackend({ url: vllm.tokenizeUrl, cache: null }),
    // The host's summary call goes through the same model, and is told apart.
    compact: async (messages, context) => {
      ok(context.exact, context.reason);
      ok(context.promptTokens + R > W);
      const summary = await generateText({
        model,
        messages: [...messages, { role: "user", content: "Summarise." }],
        maxRetries: 0,
      });
      seen.push(summary.providerMetadata!.incontext as unknown as Seen);
      const lastUser = messages.findLastIndex((m) => m.role === "user");
      return [
        { role: "user", content: `Summary: ${summary.text}` },
        ...messages.slice(lastUser),
      ];
    },
  });
  const model = wrapLanguageModel({
    model: provider("m"),
    middleware: compaction.middleware,
  });
  let ran = 0;
  const tools = {
    read_log: tool({
      description: "Reads the build log.",
      inputSchema: jsonSchema<Record<string, never>>({
        type: "object",
        properties: {},
      }),
      execute: () => {
        ran++;
        return "FAIL: budget ".repeat(150);
      },
    }),
  };
  let history: ModelMessage[] = [];
  let sentTokens = 0;
  for (let turn = 0; turn < 24; turn++) {
    history.push({ role: "user", content: `${turn}: ${TURN}` });
    sentTokens += TURN.length / 4;
    const call = {
      model,
      tools,
      messages: history,
      prepareStep: compaction.prepareStep,
      stopWhen: stepCountIs(4),
      maxRetries: 0,
    };
    const errors: unknown[] = [];
    const result = turn % 2 === 0 ? await generateText(call) : streamText({
      ...call,
      onError: ({ error }) => void errors.push(error),
    });
    const steps = await result.steps;
    deepStrictEqual(errors, []);
    for (const step of steps) {
      seen.push(step.providerMetadata!.incontext as unknown as Seen);
    }
    history = compaction.compacted([
      ...history,
      ...(await result.response).messages,
    ]);
  }
  // The conversation sent would have filled W more than twice over.
  ok(sentTokens > 2 * W);
  ok(compaction.compactions >= 2, `${compaction.compactions} compactions`);
  ok(ran >= 10, `${ran} tool runs`);
  const main = seen.filter((s) => !s.compaction);
  const summaries = seen.filter((s) => s.compaction);
  strictEqual(summaries.length, compaction.compactions);
  // Compacted before the window filled: every step got W - P, at least R.
  deepStrictEqual(new Set(main.map((s) => s.action)), new Set(["set"]));
  ok(main.every((s) => s.maxTokens! >= R));
  // Every call fitted the context: the fake vLLM answered each one.
  ok(
    vllm.requests.filter((r) => r.path === "/v1/chat/completions")
      .every((r) => r.fault === "none"),
  );
});

Deno.test("compactionStep() keeps each cut for later steps and turns", async () => {
  const count = { value: 100 };
  const told: unknown[] = [];
  const compaction = compactionStep<{ role: string; content: string }>({
    window: W,
    contextLength: C,
    minOutputTokens: R,
    backend: new FakeBackend({ count: () => count.value }),
    compact: (messages, context) => {
      told.push(context);
      return [{ role: "user", content: `${messages.length} summarised` }];
    },
  });
  const first = [
    { role: "user", content: "a" },
    { role: "assistant", content: "b" },
  ];
  strictEqual(await compaction.prepareStep({ messages: first }), undefined);
  count.value = W;
  const cut = await compaction.prepareStep({ messages: first });
  deepStrictEqual(cut, {
    messages: [{ role: "user", content: "2 summarised" }],
  });
  count.value = 100;
  // A later turn that sends the whole history again gets the cut in place,
  // even when the SDK copied the messages.
  const next = [...structuredClone(first), { role: "user", content: "c" }];
  deepStrictEqual(await compaction.prepareStep({ messages: next }), {
    messages: [
      { role: "user", content: "2 summarised" },
      { role: "user", content: "c" },
    ],
  });
  deepStrictEqual(compaction.compacted(next), [
    { role: "user", content: "2 summarised" },
    { role: "user", content: "c" },
  ]);
  strictEqual(compaction.compactions, 1);
  // No call through the middleware yet: the tools are not in the count.
  deepStrictEqual(told, [{
    promptTokens: W,
    window: W,
    contextLength: C,
    exact: false,
    reason:
      "the tools are counted from the first call through the middleware on",
  }]);
});
