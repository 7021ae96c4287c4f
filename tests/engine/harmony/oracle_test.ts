// Covers: packages/engine/src/harmony/render.ts, packages/engine/src/harmony/schema.ts
// Agent loops of 1 to 12 steps (reasoning sent back, tool calls and results,
// system and developer messages, tools with nested schemas, each effort),
// rendered by the engine and by tools/harmony_oracle.py, an independent
// Python port of vLLM's harmony_utils.py and openai-harmony's encoding.rs
// (Python's standard library only): the pieces must agree, request by request.
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import {
  type HarmonyPiece,
  renderHarmony,
} from "../../../packages/engine/src/harmony/render.ts";
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

Deno.test("renderHarmony() agrees with the independent Python port on agent loops of 1 to 12 steps", async () => {
  const cases = [];
  for (let steps = 1; steps <= 12; steps++) {
    for (const answered of [false, true]) {
      cases.push({
        request: loop(steps, steps * 2 + Number(answered), answered),
        date: "2026-05-24",
      });
    }
  }
  const script = new URL("../../../tools/harmony_oracle.py", import.meta.url);
  const output = await new Deno.Command("/usr/bin/python3", {
    args: [script.pathname],
    stdin: "piped",
    stdout: "piped",
  }).spawn();
  const writer = output.stdin.getWriter();
  await writer.write(
    new TextEncoder().encode(cases.map((c) => JSON.stringify(c)).join("\n")),
  );
  await writer.close();
  const { code, stdout } = await output.output();
  strictEqual(code, 0);
  const answers = new TextDecoder().decode(stdout).trim().split("\n").map((
    line,
  ) => JSON.parse(line) as Oracle);
  strictEqual(answers.length, cases.length);
  let rejected = 0;
  cases.forEach(({ request, date }, index) => {
    const answer = answers[index]!;
    let ours: Oracle;
    try {
      ours = pieces(renderHarmony(request, { date }));
    } catch (error) {
      if (!(error instanceof RequestRejectedError)) throw error;
      ours = { error: "rejected" };
      rejected++;
    }
    deepStrictEqual(ours, Array.isArray(answer) ? nonEmpty(answer) : answer);
  });
  // 19 renders alike, and the 5 with reasoning_effort "none" refused alike.
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
