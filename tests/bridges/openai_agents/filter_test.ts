// Covers: src/bridges/openai_agents/filter.ts, src/bridges/openai_agents/items.ts, src/bridges/cuts.ts
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import OpenAI from "openai";
import {
  Agent,
  type AgentInputItem,
  OpenAIChatCompletionsModel,
  run,
  setTracingDisabled,
  tool,
} from "@openai/agents";
import { z } from "zod";
import { compactionFilter } from "../../../src/bridges/openai_agents/mod.ts";
import {
  agentTools,
  itemsToChat,
} from "../../../src/bridges/openai_agents/items.ts";
import { VllmBackend } from "../../../src/backends/vllm/mod.ts";
import { FakeBackend, serveFakeUpstream } from "../../../src/testing/mod.ts";

// Nothing of the Agents SDK's tracing leaves the process.
setTracingDisabled(true);

const C = 16384;
const W = 12000;
const R = 1024;
const INSTRUCTIONS = "You fix builds.";
/** About 1,500 tokens to the fake's count. */
const TURN = "x".repeat(6000);

const readLog = tool({
  name: "read_log",
  description: "Reads the build log.",
  parameters: z.object({}),
  execute: () => "FAIL: budget ".repeat(150),
});

function agentOn(baseURL: string, tools = [readLog]): Agent {
  const client = new OpenAI({ baseURL, apiKey: "-", maxRetries: 0 });
  return new Agent({
    name: "fixer",
    instructions: INSTRUCTIONS,
    model: new OpenAIChatCompletionsModel(client, "m"),
    tools,
  });
}

Deno.test("itemsToChat() writes the chat messages OpenAIChatCompletionsModel sends for a run's history", async () => {
  await using vllm = await serveFakeUpstream({
    maxModelLen: C,
    toolCallEvery: 1,
  });
  const agent = agentOn(vllm.baseUrl);
  const first = await run(agent, [{ role: "user", content: "Fix the build." }]);
  const history: AgentInputItem[] = [
    ...first.history,
    { role: "user", content: [{ type: "input_text", text: "And the tests." }] },
  ];
  ok(history.some((item) => "type" in item && item.type === "function_call"));
  vllm.requests.length = 0;
  await run(agent, history);
  const sent = vllm.requests[0]!.body as {
    messages: unknown[];
    tools: unknown[];
  };
  const converted = itemsToChat(history);
  deepStrictEqual(
    [{ role: "system", content: INSTRUCTIONS }, ...converted.messages],
    sent.messages,
  );
  strictEqual(converted.inexact, undefined);
  deepStrictEqual(agentTools(agent), sent.tools);
});

Deno.test("compactionFilter() compacts an Agents SDK loop each time it reaches W, with no failed run", async () => {
  await using vllm = await serveFakeUpstream({
    maxModelLen: C,
    toolCallEvery: 2,
  });
  const agent = agentOn(vllm.baseUrl);
  const summariser = agentOn(vllm.baseUrl, []);
  const compaction: ReturnType<typeof compactionFilter<AgentInputItem>> =
    compactionFilter<AgentInputItem>({
      window: W,
      contextLength: C,
      minOutputTokens: R,
      backend: new VllmBackend({ url: vllm.tokenizeUrl, cache: null }),
      // The summary run goes through the same filter, and is left alone.
      compact: async (input, context) => {
        ok(context.exact, context.reason);
        ok(context.promptTokens + R > W);
        const summary = await run(summariser, [
          ...input,
          { role: "user", content: "Summarise." },
        ], { callModelInputFilter: compaction.callModelInputFilter });
        const turn = input.findLastIndex((item) =>
          "role" in item && item.role === "user"
        );
        return [
          { role: "user", content: `Summary: ${summary.finalOutput}` },
          ...input.slice(turn),
        ];
      },
    });
  let history: AgentInputItem[] = [];
  let sent = 0;
  const prompts: number[] = [];
  let toolCalls = 0;
  for (let turn = 0; turn < 24; turn++) {
    history.push({ role: "user", content: `${turn}: ${TURN}` });
    sent += TURN.length / 4;
    const result = await run(agent, history, {
      callModelInputFilter: compaction.callModelInputFilter,
      maxTurns: 6,
    });
    for (const response of result.rawResponses) {
      prompts.push(response.usage.inputTokens);
    }
    toolCalls += result.newItems.filter((item) =>
      item.type === "tool_call_item"
    )
      .length;
    history = compaction.compacted(result.history);
  }
  ok(sent > 2 * W);
  ok(compaction.compactions >= 2, `${compaction.compactions} compactions`);
  ok(toolCalls >= 10, `${toolCalls} tool calls`);
  // Every model call of the agent left at least R below W.
  ok(prompts.every((p) => p + R <= W), String(prompts));
  ok(
    vllm.requests.filter((r) => r.path === "/v1/chat/completions")
      .every((r) => r.fault === "none"),
  );
});

Deno.test("compactionFilter() keeps each cut for later calls and runs, and refuses bad options", async () => {
  const count = { value: 100 };
  const compaction = compactionFilter<{ role: string; content: string }>({
    window: W,
    contextLength: C,
    minOutputTokens: R,
    backend: new FakeBackend({ count: () => count.value }),
    compact: (
      input,
    ) => [{ role: "user", content: `${input.length} summarised` }],
  });
  const input = [{ role: "user", content: "a" }, {
    role: "user",
    content: "b",
  }];
  deepStrictEqual(
    (await compaction.callModelInputFilter({ modelData: { input } })).input,
    input,
  );
  count.value = W;
  deepStrictEqual(
    (await compaction.callModelInputFilter({ modelData: { input } })).input,
    [{ role: "user", content: "2 summarised" }],
  );
  count.value = 100;
  // The SDK hands the filter copies of the items.
  const next = [...structuredClone(input), { role: "user", content: "c" }];
  deepStrictEqual(
    (await compaction.callModelInputFilter({ modelData: { input: next } }))
      .input,
    [{ role: "user", content: "2 summarised" }, { role: "user", content: "c" }],
  );
  strictEqual(compaction.compactions, 1);
  for (const bad of [{ window: 0 }, { contextLength: W - 1 }]) {
    let thrown: unknown;
    try {
      compactionFilter({
        window: W,
        contextLength: C,
        backend: new FakeBackend(),
        compact: () => [],
        ...bad,
      });
    } catch (error) {
      thrown = error;
    }
    ok(thrown instanceof RangeError);
  }
});
