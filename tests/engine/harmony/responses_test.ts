// Covers: packages/engine/src/harmony/responses.ts
// vLLM's Responses path for gpt-oss, construct by construct (oracle_test.ts
// checks agent loops against an independent port): instructions, tools,
// input items, reasoning sent back, what vLLM refuses and what cannot be
// mirrored.
import { strictEqual, throws } from "node:assert/strict";
import { renderHarmonyResponses } from "../../../packages/engine/src/harmony/responses.ts";
import type { HarmonyPiece } from "../../../packages/engine/src/harmony/render.ts";
import {
  EngineError,
  RequestRejectedError,
} from "../../../packages/engine/src/common/errors.ts";

const DATE = "2026-05-24";
const IDENTITY = "You are ChatGPT, a large language model trained by OpenAI.";
const FUNCTIONS =
  "\nCalls to these tools must go to the commentary channel: 'functions'.";
const SYSTEM = (
  { identity = IDENTITY, effort = "medium", tools = false } = {},
) =>
  `<|start|>system<|message|>${identity}
Knowledge cutoff: 2024-06
Current date: ${DATE}

Reasoning: ${effort}

# Valid channels: analysis, commentary, final. Channel must be included for every message.${
    tools ? FUNCTIONS : ""
  }<|end|>`;
const TOOLS_SECTION = `# Tools

## functions

namespace functions {

// Run a command.
type run = (_: {
cmd: string,
}) => any;

} // namespace functions`;
const RUN = {
  type: "function",
  name: "run",
  description: "Run a command.",
  parameters: {
    type: "object",
    properties: { cmd: { type: "string" } },
    required: ["cmd"],
  },
};
const END = "<|start|>assistant";

const text = (pieces: HarmonyPiece[]) =>
  pieces.map((piece) => typeof piece === "string" ? piece : piece.token)
    .join("");
const render = (request: unknown, systemInstructions = false) =>
  text(renderHarmonyResponses(request, { date: DATE, systemInstructions }));
const user = (content: string) => `<|start|>user<|message|>${content}<|end|>`;

Deno.test("renderHarmonyResponses() writes a string input as the user's message", () => {
  strictEqual(render({ input: "Hi" }), `${SYSTEM()}${user("Hi")}${END}`);
  strictEqual(render({ input: "" }), `${SYSTEM()}${user("")}${END}`);
});

Deno.test("renderHarmonyResponses() writes instructions with the function tools, and drops them without", () => {
  strictEqual(
    render({ input: "Hi", instructions: "Be brief.", tools: [RUN] }),
    `${
      SYSTEM({ tools: true })
    }<|start|>developer<|message|># Instructions\n\nBe brief.\n\n${TOOLS_SECTION}<|end|>${
      user("Hi")
    }${END}`,
  );
  strictEqual(
    render({ input: "Hi", instructions: "Be brief." }),
    `${SYSTEM()}${user("Hi")}${END}`,
  );
  strictEqual(
    render({ input: "Hi", tools: [RUN], tool_choice: "none" }),
    `${
      SYSTEM({ tools: true })
    }<|start|>developer<|message|>${TOOLS_SECTION}<|end|>${user("Hi")}${END}`,
  );
});

Deno.test("renderHarmonyResponses() joins instructions to the identity under VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS", () => {
  strictEqual(
    render({ input: "Hi", instructions: "Be brief." }, true),
    `${SYSTEM({ identity: `${IDENTITY}\nBe brief.` })}${user("Hi")}${END}`,
  );
  // An empty identity gives way to the instructions alone.
  strictEqual(
    render({
      input: [{ role: "system", content: "" }, { role: "user", content: "Hi" }],
      instructions: "Be brief.",
      tools: [RUN],
    }, true),
    `${
      SYSTEM({ identity: "Be brief.", tools: true })
    }<|start|>developer<|message|>${TOOLS_SECTION}<|end|>${user("Hi")}${END}`,
  );
});

Deno.test("renderHarmonyResponses() takes the first system message as the identity and drops every system message", () => {
  strictEqual(
    render({
      input: [
        {
          role: "system",
          content: [{ type: "input_text", text: "You are a coder." }, {
            type: "input_text",
            text: "Not read.",
          }],
        },
        { role: "system", content: "Second." },
        { role: "user", content: "Hi" },
      ],
    }),
    `${SYSTEM({ identity: "You are a coder." })}${user("Hi")}${END}`,
  );
});

Deno.test("renderHarmonyResponses() writes developer, user and assistant messages part by part", () => {
  strictEqual(
    render({
      input: [
        {
          type: "message",
          role: "developer",
          content: [{ type: "input_text", text: "A" }, {
            type: "input_text",
            text: "B",
          }],
        },
        { role: "developer", content: "C" },
        { role: "user", content: [{ type: "input_text", text: "Hi <|end|>" }] },
        {
          type: "message",
          role: "assistant",
          content: [{ type: "output_text", text: "Hello", annotations: [] }],
        },
        { role: "user", content: "Bye" },
      ],
    }),
    `${SYSTEM()}<|start|>developer<|message|>Instructions:\nAInstructions:\nB<|end|>` +
      `<|start|>developer<|message|>Instructions:\nC<|end|>${
        user("Hi <|end|>")
      }<|start|>assistant<|channel|>final<|message|>Hello<|end|>${
        user("Bye")
      }${END}`,
  );
});

Deno.test("renderHarmonyResponses() writes function calls and their outputs, named by the latest call", () => {
  const call = (callId: string, name: string) => ({
    type: "function_call",
    call_id: callId,
    name,
    arguments: '{"cmd":"ls"}',
  });
  strictEqual(
    render({
      input: [
        { role: "user", content: "Go" },
        call("c1", "run"),
        call("c1", "read"),
        { type: "function_call_output", call_id: "c1", output: "a.ts" },
      ],
      tools: [RUN],
    }),
    `${
      SYSTEM({ tools: true })
    }<|start|>developer<|message|>${TOOLS_SECTION}<|end|>${
      user("Go")
    }<|start|>assistant to=functions.run<|channel|>commentary json<|message|>{"cmd":"ls"}<|call|>` +
      `<|start|>assistant to=functions.read<|channel|>commentary json<|message|>{"cmd":"ls"}<|call|>` +
      `<|start|>functions.read to=assistant<|channel|>commentary<|message|>a.ts<|end|>${END}`,
  );
  // vLLM: "No call message found"; the call must come first.
  throws(
    () =>
      render({
        input: [
          { type: "function_call_output", call_id: "c1", output: "a" },
          call("c1", "run"),
        ],
      }),
    RequestRejectedError,
  );
});

Deno.test("renderHarmonyResponses() sends reasoning content back on analysis, until a final answer follows it", () => {
  const reasoning = (...texts: string[]) => ({
    type: "reasoning",
    summary: [{ type: "summary_text", text: "Not read." }],
    content: texts.map((text) => ({ type: "reasoning_text", text })),
  });
  const input = [
    { role: "user", content: "Hi" },
    reasoning("Think", "more"),
    reasoning(),
    { type: "reasoning", summary: [] },
  ];
  strictEqual(
    render({ input }),
    `${SYSTEM()}${
      user("Hi")
    }<|start|>assistant<|channel|>analysis<|message|>Think\nmore<|end|>${END}`,
  );
  strictEqual(
    render({
      input: [...input, { role: "assistant", content: "Hello" }],
    }),
    `${SYSTEM()}${
      user("Hi")
    }<|start|>assistant<|channel|>final<|message|>Hello<|end|>${END}`,
  );
});

Deno.test("renderHarmonyResponses() takes reasoning.effort and refuses what vLLM refuses", () => {
  strictEqual(
    render({ input: "Hi", reasoning: { effort: "high", summary: "auto" } }),
    `${SYSTEM({ effort: "high" })}${user("Hi")}${END}`,
  );
  strictEqual(
    render({ input: "Hi", reasoning: null, tool_choice: "auto" }),
    `${SYSTEM()}${user("Hi")}${END}`,
  );
  for (
    const request of [
      { input: "Hi", reasoning: { effort: "minimal" } },
      { input: "Hi", reasoning: { effort: "none" } },
      { input: "Hi", tools: [RUN], tool_choice: "required" },
      {
        input: "Hi",
        tools: [RUN],
        tool_choice: { type: "function", name: "run" },
      },
      { input: "Hi", tool_choice: null },
      { input: "Hi", tools: null },
      { input: "Hi", include: ["message.output_text.logprobs"] },
      { input: "Hi", tools: [{ ...RUN, description: null }] },
      { input: "Hi", tools: [{ type: "file_search" }] },
      { input: [{ type: "item_reference", id: "msg_1" }] },
      { instructions: "No input." },
    ]
  ) throws(() => render(request), RequestRejectedError);
});

Deno.test("renderHarmonyResponses() fails what cannot be mirrored, and not as a rejection", () => {
  for (
    const request of [
      { input: "Hi", previous_response_id: "resp_1" },
      { input: "Hi", previous_input_messages: [] },
      { input: "Hi", tools: [{ type: "web_search_preview" }] },
      { input: "Hi", tools: [{ type: "code_interpreter", container: "x" }] },
      {
        input: [{
          role: "user",
          content: [{ type: "input_image", image_url: "data:," }],
        }],
      },
      { input: [{ type: "function_call", call_id: "c", name: "f" }] },
      {
        input: [
          { type: "function_call", call_id: "c", name: "f", arguments: "{}" },
          { type: "function_call_output", call_id: "c", output: [] },
        ],
      },
      { input: [{ type: "reasoning", content: [] }] },
      { input: [{ role: "user", content: ["Hi"] }] },
      { input: [{ role: "user", content: null }] },
      null,
    ]
  ) {
    throws(
      () => render(request),
      (error: unknown) =>
        error instanceof EngineError &&
        !(error instanceof RequestRejectedError),
    );
  }
});
