// Covers: packages/engine/src/harmony/render.ts, packages/engine/src/harmony/schema.ts, packages/engine/src/harmony/responses.ts
// Agent loops of 1 to 12 steps (reasoning sent back, tool calls and results,
// system and developer messages, tools with nested schemas, each effort),
// as chat and as Responses requests, rendered by the engine and by
// tools/harmony_oracle.py, an independent Python port of vLLM's
// harmony_utils.py, its Responses conversion and openai-harmony's
// encoding.rs (Python's standard library only): the pieces must agree,
// request by request.
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import {
  type HarmonyPiece,
  renderHarmony,
} from "../../../packages/engine/src/harmony/render.ts";
import { renderHarmonyResponses } from "../../../packages/engine/src/harmony/responses.ts";
import { RequestRejectedError } from "../../../packages/engine/src/common/errors.ts";

const TOOLS = [
  {
    type: "function",
    function: {
      name: "read_file",
      description: "Read a file.\r\nReturns its text.\n",
      parameters: {
        type: "object",
        description: "Where to read",
        properties: {
          path: { type: "string", description: "The path", title: "Path" },
          range: {
            oneOf: [{ type: "array", items: { type: "integer" } }, {
              type: "null",
              description: "whole file",
            }],
            description: "Lines",
            default: null,
          },
          mode: { type: "string", enum: ["text", "bytes"], default: "text" },
          opts: {
            type: "object",
            properties: {
              follow: { type: ["boolean", "null"], nullable: true },
              tags: { type: "array", examples: ["a", "b"] },
            },
          },
        },
        required: ["path"],
      },
    },
  },
  {
    type: "function",
    function: { name: "run", description: "Run a command.", parameters: {} },
  },
];

/** An agent loop of `steps` tool rounds, then (when `answered`) a final answer. */
function loop(steps: number, seed: number, answered: boolean) {
  const messages: Record<string, unknown>[] = [];
  if (seed % 2 === 0) {
    messages.push({ role: "system", content: "You are an agent." });
  }
  if (seed % 3 === 0) {
    messages.push({
      role: "developer",
      content: [{ type: "text", text: "Be <|end|> careful." }],
    });
  }
  messages.push({
    role: "user",
    content: `Task ${seed}: fix the bug in ünïcode.ts`,
  });
  for (let step = 0; step < steps; step++) {
    const id = `call_${seed}_${step}`;
    messages.push({
      role: "assistant",
      content: step % 3 === 1 ? `Step ${step}.` : null,
      reasoning: step % 4 === 3 ? "" : `Thinking about step ${step}…\n  indent`,
      tool_calls: [{
        id,
        type: "function",
        function: {
          name: step % 2 === 0 ? "read_file" : "run",
          arguments: JSON.stringify({ path: `src/${step}.ts`, n: step }),
        },
      }],
    });
    messages.push({
      role: "tool",
      tool_call_id: id,
      content: step % 5 === 4
        ? [{ type: "text", text: "part one " }, { type: "text", text: "two" }]
        : `output ${step}\n${"x".repeat(step * 7)}<|start|>`,
    });
    if (step === 5) {
      messages.push({
        role: "assistant",
        content: "Halfway.",
        reasoning: "Mid.",
      });
      messages.push({ role: "user", content: "Go on." });
    }
  }
  if (answered) {
    messages.push({
      role: "assistant",
      content: "Done.",
      reasoning: "All good.",
    });
    messages.push({ role: "user", content: "Thanks" });
  }
  const efforts = [undefined, "low", "medium", "high", "none"];
  return {
    messages,
    ...(seed % 4 === 1 ? {} : { tools: TOOLS }),
    ...(efforts[seed % 5] === undefined
      ? {}
      : { reasoning_effort: efforts[seed % 5] }),
  };
}

type Oracle = ["T" | "X", string][] | { error: string };

/** The oracle's answers, one per case, in order. */
async function oracle(cases: readonly object[]): Promise<Oracle[]> {
  const script = new URL("../../../tools/harmony_oracle.py", import.meta.url);
  const child = new Deno.Command("/usr/bin/python3", {
    args: [script.pathname],
    stdin: "piped",
    stdout: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(
    new TextEncoder().encode(cases.map((c) => JSON.stringify(c)).join("\n")),
  );
  await writer.close();
  const { code, stdout } = await child.output();
  strictEqual(code, 0);
  const answers = new TextDecoder().decode(stdout).trim().split("\n").map((
    line,
  ) => JSON.parse(line) as Oracle);
  strictEqual(answers.length, cases.length);
  return answers;
}

/** Compares each render with the oracle's; returns how many both refused. */
function compare(answers: Oracle[], renders: (() => HarmonyPiece[])[]) {
  let rejected = 0;
  renders.forEach((render, index) => {
    const answer = answers[index]!;
    let ours: Oracle;
    try {
      ours = pieces(render());
    } catch (error) {
      if (!(error instanceof RequestRejectedError)) throw error;
      ours = { error: "rejected" };
      rejected++;
    }
    deepStrictEqual(ours, Array.isArray(answer) ? nonEmpty(answer) : answer);
  });
  return rejected;
}

Deno.test("renderHarmony() agrees with the independent Python port on agent loops of 1 to 12 steps", async () => {
  const cases = [];
  for (let steps = 1; steps <= 12; steps++) {
    for (const answered of [false, true]) {
      const request = loop(steps, steps * 2 + Number(answered), answered);
      // tool_choice: validated, not rendered.
      const named = (name: string) => ({
        type: "function",
        function: { name },
      });
      const choices = [undefined, "none", "required", named("run"), named("x")];
      const choice = request.tools === undefined
        ? undefined
        : choices[steps % 5];
      cases.push({
        request: choice === undefined
          ? request
          : { ...request, tool_choice: choice },
        date: "2026-05-24",
      });
    }
  }
  const answers = await oracle(cases);
  const rejected = compare(
    answers,
    cases.map(({ request, date }) => () => renderHarmony(request, { date })),
  );
  // 17 renders alike, and 7 refused alike: reasoning_effort "none" (5) or
  // a tool_choice naming no tool (3), one case both.
  strictEqual(rejected, 7);
});

/** An agent loop as a Responses request: `steps` tool rounds, then (when `answered`) an answer. */
function responsesLoop(steps: number, seed: number, answered: boolean) {
  const input: Record<string, unknown>[] = [];
  if (seed % 3 === 0) {
    input.push({
      role: "system",
      content: seed % 2 === 0
        ? "You are a coder."
        : [{ type: "input_text", text: "" }],
    });
  }
  if (seed % 4 === 0) {
    input.push({
      type: "message",
      role: "developer",
      content: [{ type: "input_text", text: "Be <|end|> careful." }, {
        type: "input_text",
        text: "Twice.",
      }],
    });
  }
  input.push({
    role: "user",
    content: seed % 2 === 0
      ? `Task ${seed}: fix ünïcode.ts`
      : [{ type: "input_text", text: `Task ${seed}` }],
  });
  for (let step = 0; step < steps; step++) {
    const callId = `call_${seed}_${step % 3}`;
    input.push({
      type: "reasoning",
      summary: [{ type: "summary_text", text: "Not rendered." }],
      ...(step % 4 === 3 ? {} : {
        content: step % 4 === 2 ? [] : [
          { type: "reasoning_text", text: `Step ${step}…` },
          { type: "reasoning_text", text: "  then act" },
        ],
      }),
    });
    input.push({
      type: "function_call",
      call_id: callId,
      name: step % 2 === 0 ? "read_file" : "run",
      arguments: JSON.stringify({ path: `src/${step}.ts` }),
    });
    input.push({
      type: "function_call_output",
      call_id: callId,
      output: `output ${step}\n${"x".repeat(step * 5)}<|call|>`,
    });
    if (step === 5) {
      input.push({
        type: "message",
        role: "assistant",
        content: [{ type: "output_text", text: "Halfway.", annotations: [] }],
      });
      input.push({ role: "user", content: "Go on." });
    }
  }
  if (answered) {
    input.push({ role: "assistant", content: "Done." });
    input.push({ role: "user", content: "Thanks" });
  }
  const efforts = [undefined, "low", "medium", "high", "minimal"];
  const tools = TOOLS.map(({ function: fn }) => ({ type: "function", ...fn }));
  return {
    input,
    ...(seed % 5 === 2 ? {} : { tools }),
    ...(seed % 3 === 1 ? {} : { instructions: `Work on repo ${seed}.` }),
    ...(seed % 7 === 3 ? { tool_choice: "none" } : {}),
    ...(efforts[seed % 5] === undefined
      ? {}
      : { reasoning: { effort: efforts[seed % 5] } }),
  };
}

Deno.test("renderHarmonyResponses() agrees with the independent Python port on agent loops of 1 to 12 steps", async () => {
  const cases = [];
  for (let steps = 1; steps <= 12; steps++) {
    for (const answered of [false, true]) {
      const seed = steps * 2 + Number(answered);
      cases.push({
        responses: responsesLoop(steps, seed, answered),
        date: "2026-05-24",
        system_instructions: seed % 6 === 5,
      });
    }
  }
  const answers = await oracle(cases);
  const rejected = compare(
    answers,
    cases.map((c) => () =>
      renderHarmonyResponses(c.responses, {
        date: c.date,
        systemInstructions: c.system_instructions,
      })
    ),
  );
  // 19 renders alike, and the 5 with effort "minimal" refused alike.
  strictEqual(rejected, 5);
});

/** The pieces as the oracle writes them; empty texts encode to nothing. */
function pieces(render: HarmonyPiece[]): Oracle {
  return nonEmpty(
    render.map((piece) =>
      typeof piece === "string" ? ["X", piece] : ["T", piece.token]
    ),
  );
}

function nonEmpty(list: ["T" | "X", string][]): ["T" | "X", string][] {
  return list.filter(([kind, text]) => kind === "T" || text !== "");
}
