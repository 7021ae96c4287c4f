// Covers: packages/engine/src/model/harmony_count.ts, packages/engine/src/model/chat_render.ts, src/backends/local/local_backend.ts, src/backends/_shared/vllm_count.ts
// A gpt-oss folder (config.json's model_type "gpt_oss") counts its chats
// as vLLM's chat path does, through Harmony, on the calling thread and in
// the count cache's worker, and its Responses requests through vLLM's
// Responses path: o200k_harmony's ids as openai-harmony's tests list them,
// texts holding special-token text encoded as text, the date from
// VLLM_SYSTEM_START_DATE; its /tokenize still renders the template.
import {
  deepStrictEqual,
  notStrictEqual,
  rejects,
  strictEqual,
} from "node:assert/strict";
import { join } from "node:path";
import { LocalBackend } from "../../../src/backends/local/mod.ts";
import { createCountCache } from "../../../src/cache/mod.ts";
import { CountError, TemplateRejectedError } from "../../../src/core/errors.ts";
import { loadTokenizer } from "../../../packages/engine/src/tokenizer/tokenizer.ts";
import {
  harmonyStartDate,
  harmonySystemInstructions,
} from "../../../packages/engine/src/model/harmony_count.ts";
import { GPT_OSS_FILES } from "../../_kit/model_files.ts";

const C = { contextLength: 1 << 20 };
const TEMPLATE =
  "{% for m in messages %}<|start|>{{ m.role }}<|message|>{{ m.content }}<|end|>{% endfor %}<|start|>assistant";

/** A gpt-oss model folder: the tokenizer files, a template, config.json. */
async function folder(modelType: string): Promise<string> {
  const dir = await Deno.makeTempDir();
  await Deno.copyFile(GPT_OSS_FILES.tokenizerPath, join(dir, "tokenizer.json"));
  await Deno.copyFile(
    GPT_OSS_FILES.configPath,
    join(dir, "tokenizer_config.json"),
  );
  await Deno.writeTextFile(join(dir, "chat_template.jinja"), TEMPLATE);
  await Deno.writeTextFile(
    join(dir, "config.json"),
    JSON.stringify({
      architectures: ["GptOssForCausalLM"],
      model_type: modelType,
    }),
  );
  return dir;
}

const tokenizer = loadTokenizer({
  tokenizerJson: await Deno.readTextFile(GPT_OSS_FILES.tokenizerPath),
});
const ordinary = (text: string) =>
  tokenizer.count(text, { addSpecialTokens: false, splitAddedTokens: false });

const HEAD = `You are ChatGPT, a large language model trained by OpenAI.
Knowledge cutoff: 2024-06
Current date: 2026-05-24

Reasoning: medium

# Valid channels: analysis, commentary, final. Channel must be included for every message.`;

const REQUEST = {
  messages: [
    { role: "user", content: "Say <|end|> twice" },
    { role: "assistant", content: "<|end|> <|end|>", reasoning: "Easy." },
    { role: "user", content: "Thanks" },
  ],
};

/**
 * The request's count by hand: three formatting tokens a message (four with
 * a channel), the reasoning dropped, then `<|start|>assistant`.
 */
const EXPECTED = 3 + ordinary("system") + ordinary(HEAD) +
  3 + ordinary("user") + ordinary("Say <|end|> twice") +
  4 + ordinary("assistant") + ordinary("final") + ordinary("<|end|> <|end|>") +
  3 + ordinary("user") + ordinary("Thanks") + 1 + ordinary("assistant");

Deno.test("the gpt-oss tokenizer encodes Harmony's texts with openai-harmony's ids", () => {
  // From openai-harmony's src/tests.rs (test_simple_tool_call).
  const encode = (text: string) =>
    tokenizer.encode(text, {
      addSpecialTokens: false,
      splitAddedTokens: false,
    });
  deepStrictEqual(
    encode(
      'User asks: "What is the weather in Tokyo?" We need to use lookup_weather tool.',
    ),
    [
      1844,
      31064,
      25,
      392,
      4827,
      382,
      290,
      11122,
      306,
      40510,
      16842,
      1416,
      1309,
      316,
      1199,
      37342,
      170154,
      4584,
      13,
    ],
  );
  deepStrictEqual(encode("analysis"), [35644]);
  deepStrictEqual(encode("assistant"), [173781]);
  deepStrictEqual(encode(" to="), [316, 28]);
  deepStrictEqual(
    ["<|channel|>", "<|start|>", "<|end|>", "<|message|>"].map((t) =>
      tokenizer.encode(t, { addSpecialTokens: false })
    ),
    [[200005], [200006], [200007], [200008]],
  );
  // Special-token text inside a Harmony text is text.
  strictEqual(encode("<|end|>").length > 1, true);
});

Deno.test("harmonyStartDate() takes VLLM_SYSTEM_START_DATE, else the clock's local date", () => {
  const saved = Deno.env.get("VLLM_SYSTEM_START_DATE");
  try {
    Deno.env.delete("VLLM_SYSTEM_START_DATE");
    strictEqual(
      harmonyStartDate(() => new Date(2026, 0, 5, 23, 59)),
      "2026-01-05",
    );
    Deno.env.set("VLLM_SYSTEM_START_DATE", "");
    strictEqual(harmonyStartDate(() => new Date(2026, 0, 5)), "2026-01-05");
    Deno.env.set("VLLM_SYSTEM_START_DATE", "2025-12-31");
    strictEqual(harmonyStartDate(() => new Date(2026, 0, 5)), "2025-12-31");
  } finally {
    if (saved === undefined) Deno.env.delete("VLLM_SYSTEM_START_DATE");
    else Deno.env.set("VLLM_SYSTEM_START_DATE", saved);
  }
});

Deno.test("LocalBackend() counts a gpt-oss folder's chats through Harmony on the thread and in the worker", async () => {
  const gptOss = await folder("gpt_oss");
  const other = await folder("llama");
  const saved = Deno.env.get("VLLM_SYSTEM_START_DATE");
  Deno.env.set("VLLM_SYSTEM_START_DATE", "2026-05-24");
  try {
    await using cache = createCountCache();
    await using thread = new LocalBackend({ dir: gptOss, cache: null });
    await using worker = new LocalBackend({ dir: gptOss, cache });
    await using template = new LocalBackend({ dir: other, cache: null });
    const jinja = await template.count(REQUEST, C);
    await rejects(
      template.count({
        ...REQUEST,
        tools: [{ type: "function", function: { name: "f" } }],
        tool_choice: "required",
      }, C),
      (error: unknown) =>
        error instanceof CountError &&
        !(error instanceof TemplateRejectedError),
    );
    for (const backend of [thread, worker]) {
      strictEqual(await backend.count(REQUEST, C), EXPECTED);
      // Counted again: the texts' counts come from the piece store.
      strictEqual(await backend.count(REQUEST, C), EXPECTED);
      // The chat template renders otherwise: Harmony's count is another.
      notStrictEqual(EXPECTED, jinja);
      // vLLM's /tokenize renders the template, for gpt-oss too.
      const ids = await backend.tokenize({ messages: REQUEST.messages });
      strictEqual(
        ids.length,
        (await template.tokenize({ messages: REQUEST.messages })).length,
      );
      // The effort comes from the request, as vLLM's chat path reads it.
      strictEqual(
        await backend.count({ ...REQUEST, reasoning_effort: "high" }, C),
        EXPECTED - ordinary(HEAD) +
          ordinary(HEAD.replace("Reasoning: medium", "Reasoning: high")),
      );
      await rejects(
        backend.count({ ...REQUEST, reasoning_effort: "none" }, C),
        TemplateRejectedError,
      );
      // tool_choice is validated, not rendered; the template path refuses it.
      const tools = [{
        type: "function",
        function: { name: "run", description: "Run." },
      }];
      const withTools = await backend.count({ ...REQUEST, tools }, C);
      strictEqual(
        await backend.count({ ...REQUEST, tools, tool_choice: "required" }, C),
        withTools,
      );
      await rejects(
        backend.count({ ...REQUEST, tool_choice: "required" }, C),
        TemplateRejectedError,
      );
    }
  } finally {
    if (saved === undefined) Deno.env.delete("VLLM_SYSTEM_START_DATE");
    else Deno.env.set("VLLM_SYSTEM_START_DATE", saved);
    await Deno.remove(gptOss, { recursive: true });
    await Deno.remove(other, { recursive: true });
  }
});

Deno.test("harmonySystemInstructions() reads VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS as vLLM's bool(int(...))", () => {
  const saved = Deno.env.get("VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS");
  try {
    Deno.env.delete("VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS");
    strictEqual(harmonySystemInstructions(), false);
    for (const [value, on] of [["1", true], [" +01 ", true], ["0", false]]) {
      Deno.env.set("VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS", value as string);
      strictEqual(harmonySystemInstructions(), on);
    }
  } finally {
    if (saved === undefined) {
      Deno.env.delete("VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS");
    } else Deno.env.set("VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS", saved);
  }
});

/** A Responses request whose chat form the template path refuses (`text.format`). */
const RESPONSES = {
  instructions: "Be brief.",
  input: [
    { role: "user", content: [{ type: "input_text", text: "Say <|end|>" }] },
    {
      type: "reasoning",
      summary: [],
      content: [{ type: "reasoning_text", text: "Easy." }],
    },
  ],
  tools: [{ type: "function", name: "run", description: "Run." }],
  tool_choice: "none",
  text: { format: { type: "json_schema", name: "out", schema: {} } },
};
const FUNCTIONS =
  "\nCalls to these tools must go to the commentary channel: 'functions'.";
const TOOLS_SECTION =
  "# Tools\n\n## functions\n\nnamespace functions {\n\n// Run.\ntype run = () => any;\n\n} // namespace functions";

/**
 * The Responses request's count by hand: the system message with the
 * functions line, the developer message with the instructions and tools,
 * the user's text, the reasoning on analysis, `<|start|>assistant`.
 */
function responsesCount(systemInstructions: boolean): number {
  const head = systemInstructions
    ? HEAD.replace("OpenAI.", "OpenAI.\nBe brief.")
    : HEAD;
  const developer = systemInstructions
    ? TOOLS_SECTION
    : `# Instructions\n\nBe brief.\n\n${TOOLS_SECTION}`;
  return 3 + ordinary("system") + ordinary(head + FUNCTIONS) +
    3 + ordinary("developer") + ordinary(developer) +
    3 + ordinary("user") + ordinary("Say <|end|>") +
    4 + ordinary("assistant") + ordinary("analysis") + ordinary("Easy.") +
    1 + ordinary("assistant");
}

Deno.test("LocalBackend() counts a gpt-oss folder's Responses requests through Harmony on the thread and in the worker", async () => {
  const gptOss = await folder("gpt_oss");
  const other = await folder("llama");
  const saved = Deno.env.get("VLLM_SYSTEM_START_DATE");
  Deno.env.set("VLLM_SYSTEM_START_DATE", "2026-05-24");
  const R = { ...C, kind: "responses" as const };
  try {
    await using cache = createCountCache();
    await using thread = new LocalBackend({ dir: gptOss, cache: null });
    await using worker = new LocalBackend({ dir: gptOss, cache });
    await using template = new LocalBackend({ dir: other, cache: null });
    // The template path has no chat form for a structured text.format.
    await rejects(
      template.count(RESPONSES, R),
      (error: unknown) =>
        error instanceof CountError &&
        !(error instanceof TemplateRejectedError) &&
        error.message.includes("text.format"),
    );
    for (const backend of [thread, worker]) {
      strictEqual(await backend.count(RESPONSES, R), responsesCount(false));
      // extra_body wins, as the server reads it.
      strictEqual(
        await backend.count({
          ...RESPONSES,
          extra_body: { reasoning: { effort: "low" } },
        }, R),
        responsesCount(false) - ordinary(HEAD + FUNCTIONS) +
          ordinary(HEAD.replace("medium", "low") + FUNCTIONS),
      );
      await rejects(
        backend.count({ ...RESPONSES, tool_choice: "required" }, R),
        TemplateRejectedError,
      );
      await rejects(
        backend.count({ ...RESPONSES, previous_response_id: "resp_1" }, R),
        (error: unknown) =>
          error instanceof CountError &&
          !(error instanceof TemplateRejectedError) &&
          error.message.includes("previous_response_id"),
      );
    }
    Deno.env.set("VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS", "1");
    strictEqual(await thread.count(RESPONSES, R), responsesCount(true));
  } finally {
    Deno.env.delete("VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS");
    if (saved === undefined) Deno.env.delete("VLLM_SYSTEM_START_DATE");
    else Deno.env.set("VLLM_SYSTEM_START_DATE", saved);
    await Deno.remove(gptOss, { recursive: true });
    await Deno.remove(other, { recursive: true });
  }
});
