// Covers: src/testing/tool_calls.ts, src/testing/upstream_sse.ts
import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import OpenAI from "openai";
import { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import {
  createFakeUpstreamHandler,
  serveFakeUpstream,
} from "../../src/testing/mod.ts";

const TOOLS = [{
  type: "function" as const,
  function: {
    name: "read_log",
    parameters: { type: "object", properties: {} },
  },
}];

function turns(count: number): OpenAI.ChatCompletionMessageParam[] {
  const messages: OpenAI.ChatCompletionMessageParam[] = [];
  for (let i = 0; i < count; i++) {
    if (i > 0) messages.push({ role: "assistant", content: "ok" });
    messages.push({ role: "user", content: `turn ${i + 1}` });
  }
  return messages;
}

Deno.test("the fake upstream calls the first tool every N user turns, and answers a tool's result with text", async (t) => {
  await using upstream = await serveFakeUpstream({ toolCallEvery: 2 });
  const client = new OpenAI({
    baseURL: upstream.baseUrl,
    apiKey: "-",
    maxRetries: 0,
  });
  await t.step("the openai SDK, not streamed", async () => {
    const odd = await client.chat.completions.create({
      model: "m",
      messages: turns(1),
      tools: TOOLS,
    });
    strictEqual(odd.choices[0]!.finish_reason, "stop");
    const even = await client.chat.completions.create({
      model: "m",
      messages: turns(2),
      tools: TOOLS,
    });
    strictEqual(even.choices[0]!.finish_reason, "tool_calls");
    const call = even.choices[0]!.message.tool_calls![0]!;
    strictEqual(call.type, "function");
    deepStrictEqual(
      call.type === "function"
        ? [call.function.name, call.function.arguments]
        : [],
      ["read_log", "{}"],
    );
    ok(even.usage!.completion_tokens > 0);
    // The same turn without tools: text.
    const plain = await client.chat.completions.create({
      model: "m",
      messages: turns(2),
    });
    strictEqual(plain.choices[0]!.finish_reason, "stop");
    // The tool's result: text.
    const after = await client.chat.completions.create({
      model: "m",
      tools: TOOLS,
      messages: [
        ...turns(2),
        { role: "assistant", content: null, tool_calls: [call] },
        { role: "tool", tool_call_id: call.id, content: "FAIL" },
      ],
    });
    strictEqual(after.choices[0]!.finish_reason, "stop");
  });
  await t.step("the openai SDK, streamed", async () => {
    const stream = await client.chat.completions.create({
      model: "m",
      messages: turns(4),
      tools: TOOLS,
      stream: true,
    });
    const names: string[] = [];
    let args = "";
    let finish: string | null = null;
    for await (const chunk of stream) {
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
        if (delta.function?.name) names.push(delta.function.name);
        args += delta.function?.arguments ?? "";
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    deepStrictEqual([names, args, finish], [["read_log"], "{}", "tool_calls"]);
  });
  await t.step(
    "an AI SDK tool loop runs the tool and ends with text",
    async () => {
      const provider = createOpenAICompatible({
        name: "vllm",
        baseURL: upstream.baseUrl,
      });
      let ran = 0;
      const tools = {
        read_log: tool({
          description: "Reads the log",
          inputSchema: jsonSchema<Record<string, never>>({
            type: "object",
            properties: {},
          }),
          execute: () => {
            ran++;
            return "FAIL: budget";
          },
        }),
      };
      for (const run of [generateText, streamText]) {
        const result = run({
          model: provider("m"),
          messages: turns(2).map((m) => ({
            role: m.role as "user" | "assistant",
            content: String(m.content),
          })),
          tools,
          stopWhen: stepCountIs(4),
          maxRetries: 0,
        });
        const steps = await (await result).steps;
        deepStrictEqual(steps.map((step) => step.finishReason), [
          "tool-calls",
          "stop",
        ]);
      }
      strictEqual(ran, 2);
    },
  );
});

Deno.test("createFakeUpstreamHandler() refuses a toolCallEvery that is not a positive integer", () => {
  for (const value of [0, -1, 1.5, Number.NaN]) {
    throws(
      () => createFakeUpstreamHandler({ toolCallEvery: value }),
      RangeError,
    );
  }
});
