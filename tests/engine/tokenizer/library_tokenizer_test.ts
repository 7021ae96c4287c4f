// Covers: packages/engine/src/tokenizer/library_tokenizer.ts, packages/engine/src/tokenizer/tokenizer.ts
/**
 * What the engine's pipeline does not run goes through
 * `@huggingface/tokenizers`' public `Tokenizer`, and a text whose
 * whitespace or word characters the library would split otherwise than
 * the Rust crate is refused with an EngineError.
 *
 * @module
 */
import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import { Tokenizer } from "@huggingface/tokenizers";
import { loadTokenizer } from "../../../packages/engine/src/tokenizer/tokenizer.ts";
import { buildPipeline } from "../../../packages/engine/src/tokenizer/pipeline.ts";
import { libraryEncoder } from "../../../packages/engine/src/tokenizer/library_tokenizer.ts";
import { familyJson } from "../../_kit/tokenizer_shapes.ts";

/** A WordPiece tokenizer: a model the engine's pipeline does not run. */
function wordPiece(preTokenizer: unknown) {
  return {
    model: {
      type: "WordPiece",
      vocab: { "[UNK]": 0, a: 1, b: 2, "##b": 3, "é": 4 },
      unk_token: "[UNK]",
      continuing_subword_prefix: "##",
      max_input_chars_per_word: 100,
    },
    normalizer: null,
    pre_tokenizer: preTokenizer,
    post_processor: null,
    decoder: null,
    added_tokens: [],
  };
}

function refused(encode: () => unknown): void {
  throws(encode, (error: Error) => {
    strictEqual(error.name, "EngineError");
    ok(error.message.includes("Rust tokenizers crate"));
    return true;
  });
}

Deno.test("loadTokenizer() encodes a shape the pipeline does not run with the library's public Tokenizer", async () => {
  const gemma = await familyJson("gemma3");
  const json = {
    ...gemma,
    normalizer: null,
    pre_tokenizer: {
      type: "Metaspace",
      replacement: "\u2581",
      prepend_scheme: "always",
      split: false,
    },
  };
  strictEqual(buildPipeline(structuredClone(json)), undefined);
  const ours = loadTokenizer({ tokenizerJson: structuredClone(json) });
  const library = new Tokenizer(structuredClone(json), {});
  for (
    const text of ["Hello world", "a\u0085b \ufeff", "<start_of_turn>user\nhi"]
  ) {
    deepStrictEqual(ours.encode(text), library.encode(text).ids);
  }
  strictEqual(ours.decode([9259, 1902]), library.decode([9259, 1902]));
});

Deno.test("libraryEncoder() refuses the texts the library would split otherwise than the crate", async (t) => {
  await t.step("WhitespaceSplit: U+0085 and U+FEFF", () => {
    const encoder = libraryEncoder(wordPiece({ type: "WhitespaceSplit" }), {});
    deepStrictEqual(encoder.encode("a b ab", false), [1, 2, 1, 3]);
    refused(() => encoder.encode("a\u0085b", false));
    refused(() => encoder.encode("a\ufeffb", false));
  });
  await t.step("Whitespace: any non-ASCII text", () => {
    const encoder = libraryEncoder(wordPiece({ type: "Whitespace" }), {});
    deepStrictEqual(encoder.encode("ab, a", false), [1, 3, 0, 1]);
    refused(() => encoder.encode("é", false));
  });
  await t.step("added tokens that strip their neighbours' whitespace", () => {
    const json = {
      ...wordPiece(null),
      added_tokens: [{
        id: 5,
        content: "[X]",
        single_word: false,
        lstrip: true,
        rstrip: false,
        normalized: false,
        special: true,
      }],
    };
    const encoder = libraryEncoder(json, {});
    deepStrictEqual(encoder.encode("a[X]", false), [1, 5]);
    refused(() => encoder.encode("a\u0085[X]", false));
  });
  await t.step("no step that reads whitespace: nothing refused", () => {
    const encoder = libraryEncoder(wordPiece(null), {});
    deepStrictEqual(encoder.encode("é\u0085", false), [0]);
  });
});

Deno.test("loadTokenizer() fails a count the library would get wrong with an EngineError", () => {
  const tokenizer = loadTokenizer({
    tokenizerJson: wordPiece({ type: "WhitespaceSplit" }),
  });
  strictEqual(tokenizer.count("a b"), 2);
  refused(() => tokenizer.count("a\u0085b"));
});
