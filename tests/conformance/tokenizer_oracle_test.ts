// Tokenizes a corpus with the pure-JS tokenizer (src/_tokenizer.ts) and with
// the native Rust `tokenizers` binding (./_oracles.ts), for the
// Qwen3, Llama 3, Gemma 3 and DeepSeek V3 tokenizer files, and requires the
// same ids for every text.
import { deepStrictEqual } from "node:assert/strict";
import {
  compileChatTemplate,
  TemplateRaisedError,
} from "../../packages/engine/src/jinja/chat_template.ts";
import {
  loadTokenizer,
  type LocalTokenizer,
} from "../../packages/engine/src/tokenizer/tokenizer.ts";
import { MODEL_FILES, type ModelFiles } from "../_kit/model_files.ts";
import { PLAIN_TEXTS, textsWithTokens } from "../_kit/tokenizer_corpus.ts";
import { CONVERSATIONS } from "../_kit/tokenizer_conversations.ts";
import { nativeEncode } from "./_oracles.ts";

/** Renders each conversation with the family's template, skipping those it rejects. */
function chatRenders(model: ModelFiles, tokenizer: LocalTokenizer): string[] {
  const source = model.config["chat_template"];
  if (typeof source !== "string") return [];
  const template = compileChatTemplate(source, {
    now: () => new Date("2026-03-07T15:04:05"),
  });
  const renders: string[] = [];
  for (const conversation of CONVERSATIONS) {
    for (const add_generation_prompt of [true, false]) {
      try {
        renders.push(template.render({
          ...tokenizer.specialTokens,
          ...conversation,
          add_generation_prompt,
        }));
      } catch (error) {
        if (!(error instanceof TemplateRaisedError)) throw error;
      }
    }
  }
  return renders;
}

async function compare(
  model: ModelFiles,
  tokenizer: LocalTokenizer,
  texts: readonly string[],
  addSpecialTokens: boolean,
): Promise<number> {
  const native = await nativeEncode({
    tokenizer: { path: model.tokenizerPath },
    texts,
    addSpecialTokens,
  });
  const ours = texts.map((text) =>
    tokenizer.encode(text, { addSpecialTokens })
  );
  let same = 0;
  for (const [i, ids] of ours.entries()) {
    if (JSON.stringify(ids) === JSON.stringify(native[i])) same++;
  }
  const label = addSpecialTokens ? "with" : "without";
  console.log(
    `${model.family}: ${same}/${texts.length} identical (${label} special tokens)`,
  );
  deepStrictEqual(ours, native);
  return same;
}

for (const model of MODEL_FILES) {
  Deno.test(`loadTokenizer() matches the native tokenizers crate on ${model.family}`, async (t) => {
    const tokenizer = loadTokenizer({
      tokenizerJson: await Deno.readTextFile(model.tokenizerPath),
      tokenizerConfig: await Deno.readTextFile(model.configPath),
    });
    const special = [
      ...new Set([
        ...Object.values(tokenizer.specialTokens),
        ...tokenizer.addedTokens.slice(0, 8),
        "<|im_start|>",
        "<|im_end|>",
      ]),
    ];
    const texts = [...PLAIN_TEXTS, ...textsWithTokens(special)];
    await t.step("on plain and special-token texts", async () => {
      await compare(model, tokenizer, texts, true);
      await compare(model, tokenizer, texts, false);
    });
    await t.step("on chat renders, as vLLM counts chat", async () => {
      const renders = chatRenders(model, tokenizer);
      console.log(`${model.family}: ${renders.length} chat renders`);
      await compare(model, tokenizer, renders, false);
    });
  });
}
