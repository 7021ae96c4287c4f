// Counts chat requests with the local backend and, independently, with
// Hugging Face transformers as vLLM counts them (tools/transformers_oracle.py:
// vLLM's message preprocessing, apply_chat_template(tokenize=False), then
// encode(add_special_tokens=False)), over the Qwen3, Llama 3, Gemma 3 and
// DeepSeek V3 files, and requires the same count or a refusal on both sides.
// Needs a Python with transformers in tools/.oracle/py (see SETUP).
import { deepStrictEqual } from "node:assert/strict";
import { dirname } from "node:path";
import { LocalBackend } from "../../src/backends/local/mod.ts";
import { buildTokenizePayload } from "../../src/backends/_shared/vllm_payload.ts";
import { MODEL_FILES } from "../_model_files.ts";
import { CONVERSATIONS, WEATHER_TOOL } from "../_tokenizer_conversations.ts";

const PYTHON = new URL("../../tools/.oracle/py/bin/python", import.meta.url);
const ORACLE = new URL("../../tools/transformers_oracle.py", import.meta.url);
const SETUP =
  "python3 -m venv tools/.oracle/py && tools/.oracle/py/bin/pip install transformers jinja2";

/** The model type a served folder's config.json names, per family. */
const MODEL_TYPES: Record<string, string> = {
  qwen3: "qwen3",
  llama3: "llama",
  gemma3: "gemma3_text",
  deepseek_v3: "deepseek_v3",
};

const call = (args: unknown) => ({
  id: "call_1",
  type: "function",
  function: { name: "get_weather", arguments: args },
});

/** Requests where vLLM's rules matter, on top of the shared conversations. */
const EDGES: Record<string, unknown>[] = [
  {
    messages: [
      { role: "user", content: "q" },
      { role: "assistant", content: "a", reasoning_content: "hidden" },
      { role: "user", content: "q2" },
      { role: "assistant", content: "b", reasoning: "shown" },
    ],
    add_generation_prompt: false,
  },
  {
    messages: [
      { role: "user", content: "q" },
      { role: "assistant", content: "a", reasoning: "" },
    ],
    add_generation_prompt: false,
  },
  {
    tools: [WEATHER_TOOL],
    messages: [
      { role: "user", content: "Weather?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [call('{"city": "Paris", "id": 12345678901234567890}')],
      },
      {
        role: "tool",
        tool_call_id: "call_1",
        content: [{ type: "text", text: "sunny" }, {
          type: "text",
          text: "21 C",
        }],
      },
    ],
  },
  {
    tools: [WEATHER_TOOL],
    messages: [
      { role: "user", content: "Weather?" },
      { role: "assistant", content: null, tool_calls: [call("not json")] },
    ],
  },
  { messages: [{ role: "assistant", content: "x", tool_calls: [] }] },
  { messages: [] },
];

async function oracle(
  dir: string,
  modelType: string,
  requests: unknown[],
): Promise<{ transformers: string; counts: (number | { error: string })[] }> {
  let output: Deno.CommandOutput;
  try {
    const child = new Deno.Command(PYTHON.pathname, {
      args: [ORACLE.pathname],
      env: { HF_HUB_OFFLINE: "1", TRANSFORMERS_VERBOSITY: "error" },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(
      new TextEncoder().encode(JSON.stringify({ dir, modelType, requests })),
    );
    await writer.close();
    output = await child.output();
  } catch (error) {
    throw new Error(
      `The transformers oracle needs a Python with transformers in tools/.oracle/py: run \`${SETUP}\``,
      { cause: error },
    );
  }
  if (!output.success) {
    const stderr = new TextDecoder().decode(output.stderr);
    throw new Error(
      /No module named/.test(stderr)
        ? `transformers is not installed in tools/.oracle/py (${
          stderr.match(/No module named '[^']+'/)![0]
        }): run \`${SETUP}\``
        : `The transformers oracle failed: ${stderr.slice(-500)}`,
    );
  }
  return JSON.parse(new TextDecoder().decode(output.stdout));
}

Deno.test("LocalBackend.count() equals transformers' apply_chat_template + encode, as vLLM counts", async (t) => {
  const requests = [...CONVERSATIONS, ...EDGES];
  for (const model of MODEL_FILES) {
    await t.step(model.family, async () => {
      const dir = dirname(model.tokenizerPath);
      await using backend = new LocalBackend({ dir, cache: null });
      const payloads = requests.map((request) =>
        buildTokenizePayload(structuredClone(request))
      );
      const expected = await oracle(dir, MODEL_TYPES[model.family]!, payloads);
      const actual: (number | "refused")[] = [];
      for (const request of requests) {
        actual.push(
          await backend.count(structuredClone(request), {
            contextLength: 32768,
          }).catch(() => "refused" as const),
        );
      }
      const wanted = expected.counts.map((count) =>
        typeof count === "number" ? count : "refused"
      );
      console.log(
        `transformers ${expected.transformers}: ${model.family}: ${
          actual.filter((count, i) => count === wanted[i]).length
        }/${requests.length} identical`,
      );
      deepStrictEqual(actual, wanted);
    });
  }
});
