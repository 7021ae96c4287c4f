// Covers: packages/engine/src/tokenizer/tokenizer.ts, packages/engine/src/tokenizer/config.ts
import {
  deepStrictEqual,
  ok,
  rejects,
  strictEqual,
  throws,
} from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  loadTokenizer,
  readModelFolder,
} from "../../../packages/engine/src/tokenizer/tokenizer.ts";
import { specialTokensOf } from "../../../packages/engine/src/tokenizer/config.ts";
import { MODEL_FILES } from "../../_kit/model_files.ts";
import { Tokenizer } from "@huggingface/tokenizers";

function modelFiles(family: string) {
  const model = MODEL_FILES.find((m) => m.family === family);
  if (model === undefined) throw new Error(`no model files for ${family}`);
  return model;
}

async function load(family: string) {
  const model = modelFiles(family);
  return loadTokenizer({
    tokenizerJson: await Deno.readTextFile(model.tokenizerPath),
    tokenizerConfig: await Deno.readTextFile(model.configPath),
  });
}

Deno.test("loadTokenizer() encodes and counts with and without special tokens", async (t) => {
  const gemma = await load("gemma3");
  await t.step("adds BOS only when asked (Gemma 3)", () => {
    // Ids as the native tokenizers crate gives them.
    deepStrictEqual(gemma.encode("Hello world"), [2, 9259, 1902]);
    deepStrictEqual(
      gemma.encode("Hello world", { addSpecialTokens: false }),
      [9259, 1902],
    );
    strictEqual(gemma.count("Hello world"), 3);
    strictEqual(gemma.count("Hello world", { addSpecialTokens: false }), 2);
    strictEqual(gemma.count("", { addSpecialTokens: false }), 0);
  });
  await t.step("splits added tokens out of the text (Qwen3)", async () => {
    const qwen = await load("qwen3");
    const ids = qwen.encode("<|im_start|>user\nhi<|im_end|>");
    strictEqual(ids[0], 151644);
    strictEqual(ids.at(-1), 151645);
    strictEqual(
      qwen.count("hi"),
      qwen.count("hi", { addSpecialTokens: false }),
    );
  });
});

Deno.test("loadTokenizer() exposes the special-token map and added tokens", async (t) => {
  await t.step(
    "reads AddedToken objects by their content (DeepSeek V3)",
    async () => {
      const deepseek = await load("deepseek_v3");
      strictEqual(
        deepseek.specialTokens["bos_token"],
        "<｜begin▁of▁sentence｜>",
      );
      strictEqual(deepseek.specialTokens["eos_token"], "<｜end▁of▁sentence｜>");
      ok(!("unk_token" in deepseek.specialTokens));
    },
  );
  await t.step("reads plain strings and leaves out nulls (Qwen3)", async () => {
    const qwen = await load("qwen3");
    deepStrictEqual(qwen.specialTokens, {
      eos_token: "<|im_end|>",
      pad_token: "<|endoftext|>",
    });
    ok(qwen.addedTokens.includes("<|im_start|>"));
    ok(qwen.addedTokens.includes("<think>"));
    const lengths = qwen.addedTokens.map((token) => token.length);
    deepStrictEqual(lengths, [...lengths].sort((a, b) => b - a));
  });
  await t.step("specialTokensOf() ignores non-token keys and flags", () => {
    deepStrictEqual(
      specialTokensOf({
        add_bos_token: true,
        model_max_length: 8,
        sep_token: { content: "[SEP]" },
        cls_token: { id: 3 },
      }),
      { sep_token: "[SEP]" },
    );
  });
});

Deno.test("loadTokenizer() decodes and names ids as the library does", async (t) => {
  for (const model of MODEL_FILES) {
    await t.step(model.family, async () => {
      const json = await Deno.readTextFile(model.tokenizerPath);
      const config = await Deno.readTextFile(model.configPath);
      const tokenizer = loadTokenizer({
        tokenizerJson: json,
        tokenizerConfig: config,
      });
      const library = new Tokenizer(JSON.parse(json), JSON.parse(config));
      const ids = tokenizer.encode(
        "Hello, wörld 😀\n<|im_start|><start_of_turn>中文 ",
      );
      const all = [
        ...ids,
        0,
        1,
        2,
        ...tokenizer.encode(tokenizer.addedTokens[0]!),
      ];
      strictEqual(
        tokenizer.decode(all),
        library.decode(all, { skip_special_tokens: false }),
      );
      deepStrictEqual(
        tokenizer.tokenStrings([...all, -1, 10 ** 9]),
        [...all.map((id) => library.id_to_token(id)), "", ""],
      );
      for (const id of [...all, -1, 1.5, 10 ** 9]) {
        strictEqual(
          tokenizer.isTokenId(id),
          Number.isSafeInteger(id) && library.id_to_token(id) !== undefined,
        );
      }
    });
  }
});

Deno.test("loadTokenizer() rejects files that are not JSON objects", () => {
  throws(() => loadTokenizer({ tokenizerJson: "{" }), SyntaxError);
  throws(() => loadTokenizer({ tokenizerJson: "[]" }), TypeError);
  throws(
    () => loadTokenizer({ tokenizerJson: "{}", tokenizerConfig: "null" }),
    TypeError,
  );
});

const FIXTURE = fileURLToPath(
  new URL("../../fixtures/model_folder/", import.meta.url),
);

async function sha256Hex(path: string): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    await Deno.readFile(path),
  );
  return Array.from(new Uint8Array(digest))
    .map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

Deno.test("readModelFolder() reads the files and hashes tokenizer.json", async (t) => {
  await t.step("with the config and a chat_template.jinja", async () => {
    const folder = await readModelFolder(FIXTURE);
    strictEqual(
      folder.tokenizerSha256,
      await sha256Hex(join(FIXTURE, "tokenizer.json")),
    );
    strictEqual(
      folder.chatTemplate,
      "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}\n",
    );
    const tokenizer = loadTokenizer(folder);
    // Ids as the native tokenizers crate gives them.
    deepStrictEqual(tokenizer.encode("hello world foo"), [1, 2, 3, 0]);
    deepStrictEqual(tokenizer.specialTokens, {
      bos_token: "<s>",
      unk_token: "[UNK]",
    });
    deepStrictEqual(tokenizer.addedTokens, ["[UNK]", "<s>"]);
  });
  await t.step("without a chat_template.jinja (Llama 3 files)", async () => {
    const model = modelFiles("llama3");
    const folder = await readModelFolder(dirname(model.tokenizerPath));
    strictEqual(folder.tokenizerSha256, await sha256Hex(model.tokenizerPath));
    strictEqual(folder.chatTemplate, undefined);
    strictEqual(
      loadTokenizer(folder).specialTokens["bos_token"],
      "<|begin_of_text|>",
    );
  });
  await t.step("fails without tokenizer.json", async () => {
    await rejects(
      readModelFolder(join(FIXTURE, "missing")),
      (error: Error) => (error as { code?: string }).code === "ENOENT",
    );
  });
});
