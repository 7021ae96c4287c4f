// Counts chat requests with the local backend and, independently, with
// Hugging Face transformers as vLLM counts them (tools/transformers_oracle.py:
// vLLM's message preprocessing, apply_chat_template(tokenize=False), then
// encode(add_special_tokens=False)), over the Qwen3, Llama 3, Gemma 3 and
// DeepSeek V3 files, and requires the same count or a refusal on both sides.
// Needs a Python with transformers in tools/.oracle/py (see ./_oracles.ts).
import { deepStrictEqual } from "node:assert/strict";
import { dirname } from "node:path";
import { LocalBackend } from "../../src/backends/local/mod.ts";
import { buildTokenizePayload } from "../../packages/engine/src/vllm/payload.ts";
import { MODEL_FILES } from "../_kit/model_files.ts";
import {
  CONVERSATIONS,
  WEATHER_TOOL,
} from "../_kit/tokenizer_conversations.ts";
import { transformersCount } from "./_oracles.ts";

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

Deno.test("LocalBackend.count() equals transformers' apply_chat_template + encode, as vLLM counts", async (t) => {
  const requests = [...CONVERSATIONS, ...EDGES];
  for (const model of MODEL_FILES) {
    await t.step(model.family, async () => {
      const dir = dirname(model.tokenizerPath);
      await using backend = new LocalBackend({ dir, cache: null });
      const payloads = requests.map((request) =>
        buildTokenizePayload(structuredClone(request))
      );
      const expected = await transformersCount({
        dir,
        modelType: MODEL_TYPES[model.family]!,
        requests: payloads,
      });
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
