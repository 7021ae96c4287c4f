// Covers: src/backends/vllm/vllm_backend.ts, src/backends/_shared/vllm_count.ts
import { deepStrictEqual, rejects, strictEqual } from "node:assert/strict";
import { CountError } from "../../../mod.ts";
import { createCountCache } from "../../../src/cache/mod.ts";
import { VllmBackend } from "../../../src/backends/vllm/mod.ts";
import {
  createFakeVllmTokenizerHandler,
  serveFakeVllmTokenizer,
} from "../../../src/testing/mod.ts";

function setup() {
  const fake = createFakeVllmTokenizerHandler({
    maxModelLen: 8192,
    countTokens: () => 42,
  });
  const backend = new VllmBackend({
    url: "http://127.0.0.1:8000/tokenize",
    fetch: fake.fetch,
    cache: null,
  });
  return { fake, backend };
}

Deno.test("VllmBackend.count() counts a completion with the text form of /tokenize", async () => {
  const { fake, backend } = setup();
  const count = await backend.count(
    {
      model: "m",
      prompt: "Once upon",
      max_tokens: 5,
      extra_body: { add_special_tokens: false },
    },
    { contextLength: 8192, kind: "completion" },
  );
  strictEqual(count, 42);
  strictEqual(
    fake.requests[0]?.text,
    '{"model":"m","prompt":"Once upon","add_special_tokens":false}',
  );
  await backend.count({ prompt: "x" }, {
    contextLength: 8192,
    kind: "completion",
  });
  strictEqual(
    fake.requests[1]?.text,
    '{"prompt":"x","add_special_tokens":true}',
  );
  await rejects(
    backend.count({ prompt: ["a"] }, {
      contextLength: 8192,
      kind: "completion",
    }),
    CountError,
  );
  strictEqual(fake.requests.length, 2);
});

Deno.test("VllmBackend.count() converts a Responses request to chat messages", async (t) => {
  await t.step(
    "instructions, messages, function calls and outputs, tools, reasoning effort",
    async () => {
      const { fake, backend } = setup();
      await backend.count({
        model: "m",
        instructions: "Be brief.",
        reasoning: { effort: "low" },
        input: [
          { role: "developer", content: "Use tools." },
          {
            type: "message",
            role: "user",
            content: [{ type: "input_text", text: "Weather?" }],
          },
          { type: "reasoning", summary: [] },
          {
            type: "function_call",
            call_id: "c1",
            name: "weather",
            arguments: '{"city":"Paris"}',
          },
          {
            type: "function_call",
            call_id: "c2",
            name: "weather",
            arguments: '{"city":"Rome"}',
          },
          { type: "function_call_output", call_id: "c1", output: "sunny" },
          {
            type: "function_call_output",
            call_id: "c2",
            output: [{ type: "input_text", text: "rain" }],
          },
        ],
        tools: [{
          type: "function",
          name: "weather",
          description: "Weather by city",
          parameters: { type: "object" },
        }],
        max_output_tokens: 100,
      }, { contextLength: 8192, kind: "responses" });
      deepStrictEqual(fake.requests[0]?.body, {
        model: "m",
        messages: [
          { role: "system", content: "Be brief." },
          { role: "system", content: "Use tools." },
          { role: "user", content: [{ type: "text", text: "Weather?" }] },
          {
            role: "assistant",
            content: null,
            tool_calls: [
              {
                id: "c1",
                type: "function",
                function: { name: "weather", arguments: '{"city":"Paris"}' },
              },
              {
                id: "c2",
                type: "function",
                function: { name: "weather", arguments: '{"city":"Rome"}' },
              },
            ],
          },
          { role: "tool", tool_call_id: "c1", content: "sunny" },
          {
            role: "tool",
            tool_call_id: "c2",
            content: '[{"type":"input_text","text":"rain"}]',
          },
        ],
        tools: [{
          type: "function",
          function: {
            name: "weather",
            description: "Weather by city",
            parameters: { type: "object" },
          },
        }],
        add_generation_prompt: true,
        chat_template_kwargs: {
          reasoning_effort: "low",
        },
      });
    },
  );

  await t.step("a string input is one user message", async () => {
    const { fake, backend } = setup();
    await backend.count({ input: "Hi" }, {
      contextLength: 8192,
      kind: "responses",
    });
    strictEqual(
      fake.requests[0]?.text,
      '{"messages":[{"role":"user","content":"Hi"}],"add_generation_prompt":true}',
    );
  });

  await t.step("what has no chat form fails before any HTTP call", async () => {
    const { fake, backend } = setup();
    const unmirrorable = [
      { input: "Hi", tools: [{ type: "web_search" }] },
      { input: [{ type: "item_reference", id: "x" }] },
      {
        input: [{
          role: "user",
          content: [{ type: "input_file", file_id: "f" }],
        }],
      },
      { input: "Hi", text: { format: { type: "json_schema", schema: {} } } },
      {
        input: "Hi",
        tools: [{ type: "function", name: "f" }],
        tool_choice: "required",
      },
    ];
    for (const request of unmirrorable) {
      await rejects(
        backend.count(request, { contextLength: 8192, kind: "responses" }),
        CountError,
      );
    }
    strictEqual(fake.requests.length, 0);
  });
});

Deno.test("VllmBackend.outputBudgetField() writes max_output_tokens for Responses", () => {
  const { backend } = setup();
  for (
    const field of [
      "max_tokens",
      "max_completion_tokens",
      "max_output_tokens",
    ] as const
  ) {
    strictEqual(
      backend.outputBudgetField(field, { kind: "responses" }),
      "max_output_tokens",
    );
  }
  strictEqual(
    backend.outputBudgetField("max_output_tokens", { kind: "completion" }),
    "max_tokens",
  );
});

Deno.test("VllmBackend.count() keeps its own timeout while it waits on another caller's count", async () => {
  await using cache = createCountCache({ inProcess: true });
  const server = await serveFakeVllmTokenizer({
    maxModelLen: 8192,
    fault: "slow",
  });
  const patient = new VllmBackend({
    url: server.url,
    cache,
    timeoutSeconds: 30,
  });
  const hasty = new VllmBackend({
    url: server.url,
    cache,
    timeoutSeconds: 0.1,
  });
  const request = { messages: [{ role: "user", content: "same" }] };
  const first = patient.count(request, { contextLength: 8192 }).then(
    () => "patient",
    () => "patient",
  );
  while (server.requests.length === 0) {
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  const second = hasty.count(request, { contextLength: 8192 }).then(
    () => "hasty resolved",
    (error) => `hasty: ${error.message}`,
  );
  strictEqual(
    await Promise.race([first, second]),
    "hasty: vLLM /tokenize did not answer within 0.1 s",
  );
  strictEqual(server.requests.length, 1); // it waited on the same count, and gave up on its own
  await server[Symbol.asyncDispose]();
  await first;
});
