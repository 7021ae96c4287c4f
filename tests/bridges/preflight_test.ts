// Covers: src/bridges/preflight.ts, src/bridges/messages/read.ts, src/bridges/messages/count.ts, src/bridges/messages/shape.ts
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import OpenAI from "openai";
import { generateText } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { ChatOpenAI } from "@langchain/openai";
import { preflight, shouldCompress } from "../../src/bridges/preflight.ts";
import { VllmBackend } from "../../src/backends/vllm/mod.ts";
import { CountError } from "../../src/core/errors.ts";
import {
  FakeBackend,
  serveFakeUpstream,
  serveFakeVllmTokenizer,
} from "../../src/testing/mod.ts";
import { AI_SDK_HISTORY, langchainHistory } from "../_kit/sdk_conversations.ts";

const input = {
  system: "Be brief.",
  messages: [{ role: "user" as const, content: "x".repeat(400) }],
  tools: [{ type: "function", function: { name: "f", parameters: {} } }],
};
const C = 65536;
const W = 55705;

Deno.test("preflight() returns the exact compression pressure P + R - 1", async () => {
  const backend = new FakeBackend({ count: 51610 });
  const result = await preflight(input, {
    backend,
    contextLength: C,
    model: "qwen",
  });
  deepStrictEqual(result, {
    pressure: 51610 + 4096 - 1,
    promptTokens: 51610,
    source: "fake",
    exact: true,
    shape: "chat",
  });
  deepStrictEqual(backend.calls[0], {
    model: "qwen",
    messages: [{ role: "system", content: "Be brief." }, ...input.messages],
    tools: input.tools,
  });
  strictEqual(result.pressure! >= W, true);
  const fits = await preflight(input, {
    backend: new FakeBackend({ count: 51609 }),
    contextLength: C,
  });
  strictEqual(fits.pressure! >= W, false);
});

Deno.test("preflight() counts each SDK's conversation as its provider sends it", async (t) => {
  await using vllm = await serveFakeUpstream({ maxModelLen: C });
  const backend = new VllmBackend({ url: vllm.tokenizeUrl, cache: null });
  const options = { backend, contextLength: C, model: "m" };
  await t.step(
    "AI SDK ModelMessages: the prompt tokens the server reports",
    async () => {
      const provider = createOpenAICompatible({
        name: "vllm",
        baseURL: vllm.baseUrl,
      });
      const { usage } = await generateText({
        model: provider("m"),
        system: "Be brief.",
        messages: AI_SDK_HISTORY,
        maxRetries: 0,
      });
      const result = await preflight(
        { system: "Be brief.", messages: AI_SDK_HISTORY },
        options,
      );
      strictEqual(result.shape, "ai-sdk");
      strictEqual(result.exact, true);
      // The 3,900-character tool result is in the count.
      ok(result.promptTokens! > 1000);
      strictEqual(result.promptTokens, usage.inputTokens);
    },
  );
  await t.step(
    "LangChain.js messages: the prompt tokens the server reports",
    async () => {
      const model = new ChatOpenAI({
        model: "m",
        apiKey: "-",
        maxRetries: 0,
        configuration: { baseURL: vllm.baseUrl },
      });
      const history = langchainHistory();
      // Its usage, as ChatOpenAI reads it from the server's answer.
      const reply = await model.invoke(history) as unknown as {
        usage_metadata?: { input_tokens: number };
      };
      const result = await preflight({ messages: history }, options);
      strictEqual(result.shape, "langchain");
      strictEqual(result.exact, true);
      strictEqual(result.promptTokens, reply.usage_metadata?.input_tokens);
    },
  );
  await t.step(
    "OpenAI chat messages: the prompt tokens the server reports",
    async () => {
      const client = new OpenAI({
        baseURL: vllm.baseUrl,
        apiKey: "-",
        maxRetries: 0,
      });
      const completion = await client.chat.completions.create({
        model: "m",
        messages: [
          { role: "system" as const, content: "Be brief." },
          ...input.messages,
        ],
        tools: [{ type: "function", function: { name: "f", parameters: {} } }],
      });
      const result = await preflight(input, options);
      strictEqual(result.shape, "chat");
      strictEqual(result.promptTokens, completion.usage?.prompt_tokens);
    },
  );
});

Deno.test("preflight() counts Responses input items as a Responses request", async () => {
  const backend = new FakeBackend({ count: 900 });
  const items = [
    { role: "user", content: "Read the log." },
    {
      type: "function_call",
      call_id: "c1",
      name: "read",
      arguments: "{}",
    },
    { type: "function_call_output", call_id: "c1", output: "FAIL" },
  ];
  const result = await preflight(
    { system: "Be brief.", messages: items },
    { backend, contextLength: C },
  );
  strictEqual(result.shape, "responses");
  deepStrictEqual(backend.calls[0], {
    instructions: "Be brief.",
    input: items,
  });
});

Deno.test("preflight() says why a count is not exact", async (t) => {
  await t.step("a context length the server contradicts", async () => {
    await using tokenizer = await serveFakeVllmTokenizer({
      maxModelLen: 32768,
    });
    const result = await preflight(input, {
      backend: new VllmBackend({ url: tokenizer.url, cache: null }),
      contextLength: C,
    });
    strictEqual(result.exact, false);
    strictEqual(result.source, "rough-fallback");
    strictEqual(
      result.reason,
      "a rough estimate: vLLM max_model_len does not match the configured context length: 32768 != 65536",
    );
  });
  await t.step("a failed count, and the margin it adds", async () => {
    const result = await preflight(input, {
      backend: new FakeBackend({
        error: new CountError("the tokenizer is down"),
      }),
      contextLength: C,
      estimate: () => 1000,
      minOutputTokens: 100,
      fallbackMarginTokens: 50,
    });
    deepStrictEqual(result, {
      pressure: 1000 + 50 + 100 - 1,
      promptTokens: 1000,
      source: "rough-fallback",
      exact: false,
      reason: "a rough estimate: the tokenizer is down",
      shape: "chat",
    });
  });
  await t.step(
    "an error of another kind is named by its type alone",
    async () => {
      const result = await preflight(input, {
        backend: new FakeBackend({
          error: new Error("sk-secret in a message"),
        }),
        contextLength: C,
      });
      strictEqual(
        result.reason,
        "a rough estimate: the exact count failed (Error)",
      );
    },
  );
  await t.step("a backend whose count is in part an estimate", async () => {
    const result = await preflight(input, {
      backend: new FakeBackend({
        count: { tokens: 500, estimatedTokens: 20, source: "anthropic-count" },
      }),
      contextLength: C,
    });
    strictEqual(result.exact, false);
    strictEqual(result.source, "anthropic-count");
    strictEqual(
      result.reason,
      "20 of its 500 tokens are the backend's estimate",
    );
  });
  await t.step("media counted from a stand-in", async () => {
    const result = await preflight({
      messages: [{
        role: "user",
        content: [{ type: "text", text: "What?" }, {
          type: "image",
          image: "https://example.test/cat.png",
        }],
      }],
    }, { backend: new FakeBackend({ count: 10 }), contextLength: C });
    strictEqual(result.shape, "ai-sdk");
    strictEqual(result.exact, false);
    ok(result.reason?.includes("stand-in"), result.reason);
  });
  await t.step("no count at all: no pressure", async () => {
    const result = await preflight(input, {
      backend: new FakeBackend({ error: new Error("down") }),
      contextLength: C,
      estimate: () => {
        throw new Error("also down");
      },
    });
    strictEqual(result.pressure, undefined);
    strictEqual(result.promptTokens, undefined);
    strictEqual(result.source, "none");
    strictEqual(result.exact, false);
  });
});

Deno.test("preflight() refuses a conversation in no SDK's shape, naming the message and never its content", async () => {
  const backend = new FakeBackend({ count: 1 });
  const cases: [unknown, RegExp][] = [
    [
      { foo: "secret-canary" },
      /message 0 has no role, nor a Responses item type/,
    ],
    ["secret-canary", /message 0 is string/],
    [["human", "secret-canary"], /message 0 is an array/],
    [
      { role: "narrator", content: "secret-canary" },
      /message 0 has a role no SDK sends/,
    ],
    [{ role: "user", content: 42 }, /neither a string nor an array/],
  ];
  for (const [message, pattern] of cases) {
    await rejects(
      preflight({ messages: [message] }, { backend, contextLength: C }),
      (error: Error) => {
        ok(error instanceof TypeError);
        ok(pattern.test(error.message), error.message);
        ok(!error.message.includes("secret-canary"));
        return true;
      },
    );
  }
  await rejects(
    preflight({
      messages: [
        { role: "user", content: [{ type: "input_text", text: "a" }] },
        {
          role: "assistant",
          content: [{
            type: "tool-call",
            toolCallId: "1",
            toolName: "f",
            input: {},
          }],
        },
      ],
    }, { backend, contextLength: C }),
    /message 0 is a Responses input item and message 1 an AI SDK ModelMessage/,
  );
  await rejects(
    preflight({ messages: "hi" as unknown as unknown[] }, {
      backend,
      contextLength: C,
    }),
    /'messages' is not an array/,
  );
  strictEqual(backend.calls.length, 0);
});

Deno.test("preflight() rejects invalid options", async () => {
  const backend = new FakeBackend();
  await rejects(preflight(input, { backend, contextLength: 0 }), RangeError);
  await rejects(
    preflight(input, { backend, contextLength: 10, minOutputTokens: 0 }),
    RangeError,
  );
  await rejects(
    preflight(input, { backend, contextLength: 10, fallbackMarginTokens: -1 }),
    RangeError,
  );
});

Deno.test("shouldCompress() says compress exactly when less than R is left below W", async () => {
  const check = (count: number) =>
    shouldCompress(AI_SDK_HISTORY, {
      backend: new FakeBackend({ count }),
      contextLength: C,
      window: W,
      system: "Be brief.",
    });
  strictEqual((await check(W - 4096)).compress, false);
  const full = await check(W - 4095);
  strictEqual(full.compress, true);
  strictEqual(full.shape, "ai-sdk");
  strictEqual(full.exact, true);
  const failing = await shouldCompress(input.messages, {
    backend: new FakeBackend({ error: new Error("down") }),
    contextLength: C,
    window: W,
    estimate: () => {
      throw new Error("down");
    },
  });
  strictEqual(failing.compress, false); // fail-open
  await rejects(
    shouldCompress([], {
      backend: new FakeBackend(),
      contextLength: C,
      window: 0,
    }),
    RangeError,
  );
});
