import { deepStrictEqual, throws } from "node:assert/strict";
import type { JsonObject } from "../../../src/core/backend.ts";
import { CountError } from "../../../src/core/errors.ts";
import { toAnthropicCount } from "../../../src/backends/anthropic/convert.ts";
import { anthropicRequestProblem } from "../../../src/testing/anthropic_rules.ts";
import * as kit from "../../_kit/backend_kit.ts";

const PNG = "iVBORw0KGgo=";
const call = kit.toolCall;

const CASES: readonly kit.ConversionCase[] = [
  {
    name: "system and developer messages join the top-level system",
    request: {
      model: "m",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "developer", content: [{ type: "text", text: "Use SI." }] },
        { role: "user", content: "Hi" },
      ],
    },
    expected: {
      model: "m",
      messages: [{ role: "user", content: "Hi" }],
      system: [{ type: "text", text: "Be brief." }, {
        type: "text",
        text: "Use SI.",
      }],
    },
  },
  {
    name: "consecutive turns of one role merge into blocks",
    request: {
      model: "m",
      messages: [
        { role: "user", content: "One" },
        { role: "user", content: [{ type: "text", text: "Two" }] },
        { role: "assistant", content: "Three" },
      ],
    },
    expected: {
      model: "m",
      messages: [
        {
          role: "user",
          content: [{ type: "text", text: "One" }, {
            type: "text",
            text: "Two",
          }],
        },
        { role: "assistant", content: "Three" },
      ],
    },
  },
  {
    name:
      "tool calls become tool_use blocks and results one user turn of tool_result blocks",
    request: {
      model: "m",
      messages: [
        { role: "user", content: "Weather in Paris and Rome?" },
        {
          role: "assistant",
          content: "Checking.",
          tool_calls: [
            call("t1", "weather", '{"city":"Paris"}'),
            call("t2", "weather", { city: "Rome" }),
          ],
        },
        { role: "tool", tool_call_id: "t1", content: "Sunny" },
        {
          role: "tool",
          tool_call_id: "t2",
          content: [{ type: "text", text: "Rain" }],
        },
        { role: "user", content: "Thanks" },
      ],
    },
    expected: {
      model: "m",
      messages: [
        { role: "user", content: "Weather in Paris and Rome?" },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Checking." },
            {
              type: "tool_use",
              id: "t1",
              name: "weather",
              input: { city: "Paris" },
            },
            {
              type: "tool_use",
              id: "t2",
              name: "weather",
              input: { city: "Rome" },
            },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "t1", content: "Sunny" },
            {
              type: "tool_result",
              tool_use_id: "t2",
              content: [{ type: "text", text: "Rain" }],
            },
            { type: "text", text: "Thanks" },
          ],
        },
      ],
    },
  },
  {
    name: "function tools, tool_choice and parallel_tool_calls",
    request: {
      model: "m",
      messages: [{ role: "user", content: "Hi" }],
      tools: [
        {
          type: "function",
          function: {
            name: "search",
            description: "Find",
            parameters: {
              type: "object",
              properties: { q: { type: "string" } },
            },
          },
        },
        { type: "function", function: { name: "now" } },
      ],
      tool_choice: { type: "function", function: { name: "search" } },
      parallel_tool_calls: false,
    },
    expected: {
      model: "m",
      messages: [{ role: "user", content: "Hi" }],
      tools: [
        {
          name: "search",
          description: "Find",
          input_schema: {
            type: "object",
            properties: { q: { type: "string" } },
          },
        },
        { name: "now", input_schema: { type: "object", properties: {} } },
      ],
      tool_choice: {
        type: "tool",
        name: "search",
        disable_parallel_tool_use: true,
      },
    },
  },
  {
    name: "a base64 data URL image becomes an image block",
    request: {
      model: "m",
      messages: [{
        role: "user",
        content: [
          { type: "text", text: "What is it?" },
          {
            type: "image_url",
            image_url: { url: `data:image/png;base64,${PNG}` },
          },
        ],
      }],
    },
    expected: {
      model: "m",
      messages: [{
        role: "user",
        content: [
          { type: "text", text: "What is it?" },
          {
            type: "image",
            source: { type: "base64", media_type: "image/png", data: PNG },
          },
        ],
      }],
    },
  },
  {
    name: "empty content is dropped and the turns around it merge",
    request: {
      model: "m",
      messages: [
        { role: "user", content: "A" },
        { role: "assistant", content: "" },
        { role: "user", content: "B" },
      ],
    },
    expected: {
      model: "m",
      messages: [{
        role: "user",
        content: [{ type: "text", text: "A" }, { type: "text", text: "B" }],
      }],
    },
  },
  {
    name: "extra_body wins, and the model falls back to the default",
    request: {
      messages: [{ role: "user", content: "top" }],
      extra_body: { messages: [{ role: "user", content: "nested" }] },
    },
    expected: {
      model: "default-model",
      messages: [{ role: "user", content: "nested" }],
    },
  },
];

/** Requests already in the Messages shape pass unchanged. */
const ANTHROPIC_SHAPED: JsonObject = {
  model: "claude-sonnet-4-5",
  system: [{
    type: "text",
    text: "Be brief.",
    cache_control: { type: "ephemeral" },
  }],
  messages: [
    { role: "user", content: "Weather?" },
    {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "Use the tool.", signature: "sig" },
        {
          type: "tool_use",
          id: "toolu_1",
          name: "weather",
          input: { city: "Paris" },
        },
      ],
    },
    {
      role: "user",
      content: [{
        type: "tool_result",
        tool_use_id: "toolu_1",
        content: "Sunny",
      }],
    },
  ],
  tools: [
    { name: "weather", input_schema: { type: "object" } },
    { type: "web_search_20250305", name: "web_search", max_uses: 3 },
  ],
  tool_choice: { type: "auto" },
  thinking: { type: "enabled", budget_tokens: 2048 },
  max_tokens: 4096,
  temperature: 1,
};

Deno.test("toAnthropicCount() converts OpenAI chat requests", async (t) => {
  for (const { name, request, expected } of CASES) {
    await t.step(name, () => {
      const converted = toAnthropicCount(request, "default-model");
      deepStrictEqual(converted, expected);
      // The real API (as the fake checks it) accepts every conversion.
      deepStrictEqual(anthropicRequestProblem(converted), undefined);
    });
  }
});

Deno.test("toAnthropicCount() passes Messages-shaped requests unchanged", () => {
  const { max_tokens: _cap, temperature: _t, ...counted } = ANTHROPIC_SHAPED;
  const converted = toAnthropicCount(ANTHROPIC_SHAPED, undefined);
  deepStrictEqual(converted, { ...counted, system: ANTHROPIC_SHAPED.system });
  deepStrictEqual(anthropicRequestProblem(converted), undefined);
});

Deno.test("toAnthropicCount() maps tool_choice strings", async (t) => {
  const tools = [{ type: "function", function: { name: "f" } }];
  const table: [unknown, unknown][] = [
    ["auto", undefined],
    ["required", { type: "any" }],
    ["none", { type: "none" }],
    [{ type: "any" }, { type: "any" }],
    [{ type: "tool", name: "f" }, { type: "tool", name: "f" }],
  ];
  for (const [choice, expected] of table) {
    await t.step(JSON.stringify(choice), () => {
      const converted = toAnthropicCount({
        model: "m",
        messages: [{ role: "user", content: "Hi" }],
        tools,
        tool_choice: choice,
      }, undefined);
      deepStrictEqual(converted.tool_choice, expected);
    });
  }
});

Deno.test("toAnthropicCount() refuses what has no faithful Messages form", async (t) => {
  const user = (content: unknown) => ({
    model: "m",
    messages: [{ role: "user", content }],
  });
  const table: [string, JsonObject][] = [
    ["no model", { messages: [] }],
    [
      "an OpenAI allowed_tools tool_choice",
      {
        model: "m",
        messages: [],
        tools: [{ type: "function", function: { name: "f" } }],
        tool_choice: { type: "allowed_tools", allowed_tools: {} },
      },
    ],
    ["no messages array", { model: "m", messages: "Hi" }],
    [
      "a remote image URL",
      user([{ type: "image_url", image_url: { url: "https://x.test/a.png" } }]),
    ],
    [
      "an SVG data URL",
      user([{
        type: "image_url",
        image_url: { url: "data:image/svg+xml;base64,AA==" },
      }]),
    ],
    [
      "an audio part",
      user([{ type: "input_audio", input_audio: {} }]),
    ],
    [
      "unparsable tool arguments",
      {
        model: "m",
        messages: [{
          role: "assistant",
          tool_calls: [call("t", "f", "{oops")],
        }],
      },
    ],
    [
      "tool arguments that are not an object",
      {
        model: "m",
        messages: [{ role: "assistant", tool_calls: [call("t", "f", "[1]")] }],
      },
    ],
    [
      "a tool message without tool_call_id",
      { model: "m", messages: [{ role: "tool", content: "x" }] },
    ],
    [
      "a legacy function message",
      { model: "m", messages: [{ role: "function", name: "f", content: "x" }] },
    ],
    [
      "a system part that is not text",
      { model: "m", messages: [], system: [{ type: "image" }] },
    ],
  ];
  for (const [name, request] of table) {
    await t.step(name, () => {
      throws(() => toAnthropicCount(request, undefined), CountError);
    });
  }
});

Deno.test("toAnthropicCount() never mutates the request", () => {
  const request = structuredClone(CASES[2]!.request);
  const copy = structuredClone(request);
  toAnthropicCount(request, undefined);
  deepStrictEqual(request, copy);
});
