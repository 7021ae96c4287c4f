// Covers: packages/engine/src/harmony/render.ts, packages/engine/src/harmony/messages.ts
// vLLM's chat path for gpt-oss, construct by construct: each render as
// openai-harmony writes it (its test-data renders agree, and
// tests/engine/harmony/oracle_test.ts checks agent loops against an
// independent port), the formatting tokens apart from the texts.
import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import {
  type HarmonyPiece,
  renderHarmony,
} from "../../../packages/engine/src/harmony/render.ts";
import {
  EngineError,
  RequestRejectedError,
} from "../../../packages/engine/src/common/errors.ts";

const DATE = "2026-05-24";
const SYSTEM = (effort = "medium", tools = false) =>
  `<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.
Knowledge cutoff: 2024-06
Current date: ${DATE}

Reasoning: ${effort}

# Valid channels: analysis, commentary, final. Channel must be included for every message.${
    tools
      ? "\nCalls to these tools must go to the commentary channel: 'functions'."
      : ""
  }<|end|>`;

const render = (payload: Record<string, unknown>) =>
  renderHarmony(payload, { date: DATE });
const text = (pieces: HarmonyPiece[]) =>
  pieces.map((piece) => typeof piece === "string" ? piece : piece.token)
    .join("");

const WEATHER = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Get the weather.\nIn one city.",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, days: { type: "integer" } },
      required: ["city"],
    },
  },
};

Deno.test("renderHarmony() writes the system message, the user's message and the generation prompt", () => {
  const pieces = render({ messages: [{ role: "user", content: "Hi" }] });
  strictEqual(
    text(pieces),
    `${SYSTEM()}<|start|>user<|message|>Hi<|end|><|start|>assistant`,
  );
  deepStrictEqual(pieces.slice(-2), [{ token: "<|start|>" }, "assistant"]);
});

Deno.test("renderHarmony() takes the request's reasoning effort and refuses those Harmony lacks", () => {
  const messages = [{ role: "user", content: "Hi" }];
  strictEqual(
    text(render({ messages, reasoning_effort: "high" })).startsWith(
      SYSTEM("high"),
    ),
    true,
  );
  for (const effort of ["none", "minimal", "xhigh", "max", 1]) {
    throws(
      () => render({ messages, reasoning_effort: effort }),
      RequestRejectedError,
    );
  }
});

Deno.test("renderHarmony() writes the tools as a TypeScript namespace in a developer message", () => {
  strictEqual(
    text(render({
      tools: [WEATHER, {
        type: "function",
        function: { name: "now", description: "" },
      }],
      messages: [{ role: "user", content: "Weather?" }],
    })),
    `${SYSTEM("medium", true)}<|start|>developer<|message|># Tools

## functions

namespace functions {

// Get the weather.
// In one city.
type get_weather = (_: {
city: string,
days?: number,
}) => any;

type now = () => any;

} // namespace functions<|end|><|start|>user<|message|>Weather?<|end|><|start|>assistant`,
  );
});

Deno.test("renderHarmony() refuses a tool without a description, as Harmony's ToolDescription does", () => {
  throws(
    () =>
      render({
        tools: [{ type: "function", function: { name: "f" } }],
        messages: [],
      }),
    RequestRejectedError,
  );
});

Deno.test("renderHarmony() renders any tool_choice vLLM accepts as auto, and refuses the others", () => {
  const messages = [{ role: "user", content: "Weather?" }];
  const auto = text(render({ tools: [WEATHER], messages }));
  // --exclude-tools-when-tool-choice-none is off by default: tools stay.
  for (
    const choice of [
      "auto",
      "none",
      "required",
      null,
      { type: "function", function: { name: "get_weather" } },
    ]
  ) {
    strictEqual(
      text(render({ tools: [WEATHER], tool_choice: choice, messages })),
      auto,
    );
  }
  strictEqual(
    text(render({ tool_choice: "none", messages })),
    text(render({ messages })),
  );
  for (
    const [tools, choice] of [
      [[WEATHER], { type: "function", function: { name: "get_time" } }],
      [[WEATHER], { type: "function", function: { name: "" } }],
      [[WEATHER], { type: "function" }],
      [[WEATHER], "any"],
      [undefined, "auto"],
      [undefined, "required"],
    ]
  ) {
    throws(
      () => render({ tools, tool_choice: choice, messages }),
      RequestRejectedError,
    );
  }
});

Deno.test("renderHarmony() keeps the request's system and developer messages as text messages", () => {
  strictEqual(
    text(render({
      messages: [
        { role: "system", content: "Be brief." },
        { role: "developer", content: [{ type: "text", text: "Use tools." }] },
        { role: "user", content: "Hi" },
      ],
    })),
    `${SYSTEM()}<|start|>system<|message|>Be brief.<|end|>` +
      "<|start|>developer<|message|>Use tools.<|end|>" +
      "<|start|>user<|message|>Hi<|end|><|start|>assistant",
  );
});

Deno.test("renderHarmony() writes tool calls to functions.NAME and tool results from it", () => {
  const pieces = render({
    messages: [
      { role: "user", content: "Weather in Paris?" },
      {
        role: "assistant",
        content: "Looking.",
        reasoning: "Call the tool.",
        tool_calls: [{
          id: "c1",
          type: "function",
          function: { name: "get_weather", arguments: '{"city":"Paris"}' },
        }],
      },
      { role: "tool", tool_call_id: "c1", content: "18C" },
      {
        role: "tool",
        tool_call_id: "unknown",
        content: [{ type: "text", text: "?" }],
      },
    ],
  });
  strictEqual(
    text(pieces),
    `${SYSTEM()}<|start|>user<|message|>Weather in Paris?<|end|>` +
      "<|start|>assistant<|channel|>commentary<|message|>Looking.<|end|>" +
      "<|start|>assistant<|channel|>analysis<|message|>Call the tool.<|end|>" +
      '<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city":"Paris"}<|call|>' +
      "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>18C<|end|>" +
      "<|start|>functions. to=assistant<|channel|>commentary<|message|>?<|end|>" +
      "<|start|>assistant",
  );
  // The role and the recipient are texts of their own, as Harmony encodes them.
  const call = pieces.indexOf(" to=functions.get_weather");
  deepStrictEqual(pieces.slice(call - 2, call + 1), [
    { token: "<|start|>" },
    "assistant",
    " to=functions.get_weather",
  ]);
});

Deno.test("renderHarmony() drops the reasoning before the last final answer and keeps the ongoing one", () => {
  const loop = [
    { role: "user", content: "Q1" },
    { role: "assistant", content: "A1", reasoning: "R1" },
    { role: "user", content: "Q2" },
    {
      role: "assistant",
      reasoning: "R2",
      reasoning_content: "never read",
      tool_calls: [{ id: "c", function: { name: "f", arguments: "{}" } }],
    },
    { role: "tool", tool_call_id: "c", content: "ok" },
  ];
  strictEqual(
    text(render({ messages: loop })),
    `${SYSTEM()}<|start|>user<|message|>Q1<|end|>` +
      "<|start|>assistant<|channel|>final<|message|>A1<|end|>" +
      "<|start|>user<|message|>Q2<|end|>" +
      "<|start|>assistant<|channel|>analysis<|message|>R2<|end|>" +
      "<|start|>assistant to=functions.f<|channel|>commentary json<|message|>{}<|call|>" +
      "<|start|>functions.f to=assistant<|channel|>commentary<|message|>ok<|end|>" +
      "<|start|>assistant",
  );
  const answered = [...loop, { role: "assistant", content: "A2" }];
  strictEqual(text(render({ messages: answered })).includes("R2"), false);
});

Deno.test("renderHarmony() encodes content parts apart and skips an answer whose first part is empty", () => {
  const pieces = render({
    messages: [
      {
        role: "user",
        content: [{ type: "text", text: "a" }, { type: "image_url" }, {
          type: "text",
          text: "b",
        }],
      },
      {
        role: "assistant",
        content: [{ type: "text", text: "" }, { type: "text", text: "x" }],
      },
      { role: "assistant", content: "" },
    ],
  });
  deepStrictEqual(pieces.slice(5, 11), [
    { token: "<|start|>" },
    "user",
    { token: "<|message|>" },
    "a",
    "",
    "b",
  ]);
  strictEqual(text(pieces).includes("<|channel|>final"), false);
});

Deno.test("renderHarmony() fails what vLLM fails or cannot be mirrored", () => {
  for (
    const messages of [
      [{ role: "function", content: "x" }],
      [{ role: "user", content: 7 }],
      [{ role: "assistant", tool_calls: null }],
      [{ role: "assistant", content: "", reasoning: ["x"] }],
    ]
  ) {
    throws(() => render({ messages }), EngineError);
  }
});
