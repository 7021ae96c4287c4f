import { ok, strictEqual } from "node:assert/strict";
import { ChatOpenAI } from "@langchain/openai";
import {
  type BaseMessage,
  HumanMessage,
  SystemMessage,
} from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { convertToOpenAITool } from "@langchain/core/utils/function_calling";
import { createAgent, summarizationMiddleware } from "langchain";
import { RunTree } from "langsmith";
import { z } from "zod";
import { summarizationBudget } from "../../../src/bridges/langchain/mod.ts";
import { VllmBackend } from "../../../src/backends/vllm/mod.ts";
import { FakeBackend, serveFakeUpstream } from "../../../src/testing/mod.ts";
import { langchainHistory } from "../../_kit/sdk_conversations.ts";

// A LangChain.js agent run makes a LangSmith client even with tracing off, and
// the client reads the home directory, which the suite may not: a client that
// never sends anything stands in.
(RunTree as unknown as { sharedClient: unknown }).sharedClient ??= {};

const C = 16384;
const W = 12000;
const R = 1024;
const SYSTEM = "You fix builds.";
/** About 1,500 tokens to the fake's count. */
const TURN = "x".repeat(6000);

const readLog = tool(() => "FAIL: budget ".repeat(150), {
  name: "read_log",
  description: "Reads the build log.",
  schema: z.object({}),
});

function chatModel(baseURL: string): ChatOpenAI {
  return new ChatOpenAI({
    model: "m",
    apiKey: "-",
    maxRetries: 0,
    configuration: { baseURL },
  });
}

/** The prompt tokens the server reported for an answer. */
function inputTokens(message: BaseMessage): number | undefined {
  // AIMessage's own type reads as never under exactOptionalPropertyTypes.
  return (message as unknown as { usage_metadata?: { input_tokens: number } })
    .usage_metadata?.input_tokens;
}

Deno.test("summarizationBudget() counts what ChatOpenAI sends, system prompt and tools included", async () => {
  await using vllm = await serveFakeUpstream({ maxModelLen: C });
  const tools = [convertToOpenAITool(readLog)];
  const { tokenCounter, trigger } = summarizationBudget({
    window: W,
    contextLength: C,
    minOutputTokens: R,
    backend: new VllmBackend({ url: vllm.tokenizeUrl, cache: null }),
    system: SYSTEM,
    tools,
  });
  const history = langchainHistory().slice(1);
  const reply = await chatModel(vllm.baseUrl).bindTools([readLog]).invoke([
    new SystemMessage(SYSTEM),
    ...history,
  ]);
  strictEqual(await tokenCounter(history), inputTokens(reply));
  strictEqual(trigger.tokens, W - R + 1);
});

Deno.test("summarizationBudget() adds F to a rough estimate, and counts nothing when every count fails", async () => {
  const budget = (estimate: () => number) =>
    summarizationBudget({
      window: W,
      contextLength: C,
      fallbackMarginTokens: 100,
      backend: new FakeBackend({ error: new Error("down") }),
      estimate,
    });
  strictEqual(
    await budget(() => 500).tokenCounter([new HumanMessage("Hi")]),
    600,
  );
  strictEqual(
    await budget(() => {
      throw new Error("down");
    }).tokenCounter([new HumanMessage("Hi")]),
    0,
  );
});

Deno.test("summarizationMiddleware summarises a LangChain.js agent each time it reaches W, with no failed run", async () => {
  await using vllm = await serveFakeUpstream({
    maxModelLen: C,
    toolCallEvery: 2,
  });
  const model = chatModel(vllm.baseUrl);
  const budget = summarizationBudget({
    window: W,
    contextLength: C,
    minOutputTokens: R,
    backend: new VllmBackend({ url: vllm.tokenizeUrl, cache: null }),
    system: SYSTEM,
    tools: [convertToOpenAITool(readLog)],
  });
  // The counter has the type summarizationMiddleware's tokenCounter has.
  const tokenCounter: (messages: BaseMessage[]) => number | Promise<number> =
    budget.tokenCounter;
  // LangChain.js's middleware types do not hold under exactOptionalPropertyTypes
  // (this repository's setting): they are handed over as they are.
  const summarize = summarizationMiddleware(
    {
      model,
      keep: { messages: 2 },
      trigger: budget.trigger,
      tokenCounter,
    } as never,
  );
  const agent = createAgent({
    model,
    tools: [readLog],
    systemPrompt: SYSTEM,
    middleware: [summarize as never],
  });
  const invoke = agent.invoke.bind(agent) as unknown as (
    input: { messages: BaseMessage[] },
  ) => Promise<{ messages: BaseMessage[] }>;
  let messages: BaseMessage[] = [];
  let sent = 0;
  const prompts: number[] = [];
  for (let turn = 0; turn < 24; turn++) {
    sent += TURN.length / 4;
    const result = await invoke({
      messages: [...messages, new HumanMessage(`${turn}: ${TURN}`)],
    });
    messages = result.messages;
    for (const message of messages) {
      const tokens = inputTokens(message);
      if (tokens !== undefined) prompts.push(tokens);
    }
  }
  const summaries =
    vllm.requests.filter((r) =>
      r.path === "/v1/chat/completions" &&
      r.text.includes("Context Extraction Assistant")
    ).length;
  ok(sent > 2 * W);
  ok(summaries >= 2, `${summaries} summaries`);
  // Every model call of the agent left at least R below W.
  ok(prompts.length > 0 && prompts.every((p) => p + R <= W), String(prompts));
  ok(
    vllm.requests.filter((r) => r.path === "/v1/chat/completions")
      .every((r) => r.fault === "none"),
  );
});
