// LocalBackend.count() against an oracle no one here wrote: Python jinja2
// (tools/jinja2_oracle.py) renders the same preprocessed context, read from
// JSON text so that integral floats and key order survive, and the native
// Rust `tokenizers` binding tokenizes it without special tokens, as vLLM's
// chat /tokenize does (both through ./_oracles.ts).
import { deepStrictEqual, ok } from "node:assert/strict";
import { dirname } from "node:path";
import { LocalBackend } from "../../src/backends/local/mod.ts";
import { TemplateRejectedError } from "../../src/core/errors.ts";
import { buildTokenizePayload } from "../../packages/engine/src/vllm/payload.ts";
import {
  detectContentFormat,
  templateContext,
} from "../../packages/engine/src/vllm/preprocess.ts";
import { PyFloat } from "../../packages/engine/src/jinja/chat_template.ts";
import { pyFloatRepr } from "../../packages/engine/src/jinja/py.ts";
import { specialTokensOf } from "../../packages/engine/src/tokenizer/config.ts";
import { MODEL_FILES } from "../_kit/model_files.ts";
import { CONVERSATIONS } from "../_kit/tokenizer_conversations.ts";
import { jinja2Render, nativeEncode } from "./_oracles.ts";

const NOW = "2026-03-07T15:04:05";
/** JSON text of a preprocessed context: Maps in order, PyFloats as floats. */
function pyJson(value: unknown): string {
  if (value instanceof PyFloat) return pyFloatRepr(value.value);
  const entries = value instanceof Map
    ? [...value]
    : typeof value === "object" && value !== null && !Array.isArray(value)
    ? Object.entries(value)
    : undefined;
  if (entries !== undefined) {
    return `{${
      entries.map(([k, v]) => `${JSON.stringify(k)}:${pyJson(v)}`).join(",")
    }}`;
  }
  if (Array.isArray(value)) return `[${value.map(pyJson).join(",")}]`;
  return JSON.stringify(value);
}

const lookup = {
  type: "function",
  function: {
    name: "lookup",
    description: "Look up a record by numeric keys.",
    parameters: {
      type: "object",
      properties: { ids: { type: "object" }, ratio: { type: "number" } },
    },
  },
};

/** Requests as clients send them: tool-call arguments are JSON strings. */
const REQUESTS: Record<string, unknown>[] = [
  ...CONVERSATIONS.map((conversation) =>
    JSON.parse(
      JSON.stringify(conversation, (key, value) =>
        key === "arguments" && typeof value === "object"
          ? JSON.stringify(value)
          : value),
    )
  ),
  {
    tools: [lookup, { type: "function", function: { name: "ping" } }],
    messages: [
      { role: "system", content: "You are an agent." },
      { role: "user", content: "Look up 10 and 2, at ratio 1.0." },
      {
        role: "assistant",
        content: null,
        reasoning_content: "Two lookups in parallel.\nThen answer.",
        tool_calls: [
          {
            id: "a",
            type: "function",
            function: {
              name: "lookup",
              arguments:
                '{"ratio": 1.0, "ids": {"10": 750.0, "2": 1e-07, "b": [1.5, 2.0]}}',
            },
          },
          {
            id: "b",
            type: "function",
            function: { name: "ping", arguments: "" },
          },
        ],
      },
      { role: "tool", tool_call_id: "a", content: '{"ok": true}' },
      { role: "tool", tool_call_id: "b", content: "pong" },
      {
        role: "assistant",
        content: [{ type: "text", text: "Done." }, {
          type: "text",
          text: "Both found.",
        }],
        tool_calls: [],
      },
      { role: "user", content: [{ type: "text", text: "Again, 😀 ok?" }] },
    ],
  },
  {
    messages: [
      { role: "user", content: "Hi" },
      { role: "user", content: "Roles that do not alternate." },
    ],
  },
  {
    messages: [
      { role: "user", content: "Finish my sentence:" },
      { role: "assistant", content: "The quick brown fox  " },
    ],
    add_generation_prompt: false,
    continue_final_message: true,
  },
];

Deno.test("LocalBackend.count() equals jinja2 + native tokenizers per model family", async (t) => {
  for (const model of MODEL_FILES) {
    const source = model.config["chat_template"];
    if (typeof source !== "string") continue;
    const specialTokens = specialTokensOf(model.config);
    const contentFormat = detectContentFormat(source);
    const backend = new LocalBackend({
      dir: dirname(model.tokenizerPath),
      cache: null,
      now: () => new Date(NOW),
    });
    const cases = REQUESTS.flatMap((request) =>
      [true, false].map((agp) => ({
        ...request,
        add_generation_prompt: request.continue_final_message ? false : agp,
      }))
    );
    const contexts = cases.map((request) => {
      const input = templateContext(buildTokenizePayload(request), {
        specialTokens,
        contentFormat,
      });
      return { input, json: pyJson({ c: input.context }) };
    });
    const renders = await jinja2Render(
      contexts.map(({ json }) => ({
        template: source,
        context_json: json,
        context_key: "c",
        now: NOW,
      })),
    );
    const texts = renders.map((render, i) => {
      if (!("text" in render)) return undefined;
      const from = contexts[i]!.input.continueFrom;
      return from === undefined ? render.text : cut(render.text, from);
    });
    const native = await nativeEncode({
      tokenizer: { path: model.tokenizerPath },
      texts: texts.filter((text) => text !== undefined),
      addSpecialTokens: false,
    });
    const expected: (number | "rejected")[] = [];
    let next = 0;
    for (const text of texts) {
      expected.push(
        text === undefined ? "rejected" : native[next++]!.length,
      );
    }
    const actual: (number | "rejected")[] = [];
    for (const request of cases) {
      try {
        actual.push(await backend.count(request, { contextLength: 131072 }));
      } catch (error) {
        ok(error instanceof TemplateRejectedError, String(error));
        actual.push("rejected");
      }
    }
    const same = actual.filter((count, i) => count === expected[i]).length;
    console.log(
      `local oracle: ${model.family}: ${same}/${cases.length} identical (${
        expected.filter((c) => c === "rejected").length
      } rejected by both)`,
    );
    await t.step(model.family, () => deepStrictEqual(actual, expected));
    await backend[Symbol.asyncDispose]();
  }
});

/** transformers' continue_final_message cut, written out again from its source. */
function cut(rendered: string, content: unknown): string {
  const final = Array.isArray(content)
    ? content.findLast((part) => "text" in part).text
    : content as string;
  const at = rendered.lastIndexOf(final.trim());
  return rendered.slice(at, at + final.trimStart().length) === final
    ? rendered.slice(0, at + final.trimStart().length)
    : rendered.slice(0, at + final.trim().length);
}
