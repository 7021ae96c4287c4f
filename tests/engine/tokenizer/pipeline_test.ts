// Covers: packages/engine/src/tokenizer/pipeline.ts, packages/engine/src/tokenizer/added_vocabulary.ts, packages/engine/src/tokenizer/normalizers.ts, packages/engine/src/tokenizer/pre_tokenizers.ts, packages/engine/src/tokenizer/patterns.ts, packages/engine/src/tokenizer/post_processor.ts, packages/engine/src/tokenizer/bpe_model.ts
/**
 * The engine's own pipeline against two references: the stock
 * `@huggingface/tokenizers`, through its public `encode`, on a large varied
 * corpus for the four families (where the library gives the Rust crate's
 * ids; tests/conformance/tokenizer_oracle_test.ts holds it to the crate),
 * and the Rust crate's ids, pinned here from the native binding, for the
 * shapes of tests/_kit/tokenizer_shapes.ts, whose branches the library does
 * not always follow (tests/conformance/tokenizer_shapes_test.ts compares
 * them with the crate on the corpus).
 *
 * @module
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { Tokenizer } from "@huggingface/tokenizers";
import { loadTokenizer } from "../../../packages/engine/src/tokenizer/tokenizer.ts";
import { buildPipeline } from "../../../packages/engine/src/tokenizer/pipeline.ts";
import { MODEL_FILES } from "../../_kit/model_files.ts";
import { mixedTexts } from "../../_kit/tokenizer_corpus.ts";
import {
  familyJson,
  TOKENIZER_SHAPES,
  type TokenizerJson,
} from "../../_kit/tokenizer_shapes.ts";

/** The Rust crate's ids (tokenizers 0.23.2, without special tokens) for each shape's texts. */
const CRATE_IDS: Readonly<Record<string, readonly [string, number[]][]>> = {
  "ByteLevel with its own regex and a prefix space": [
    ["\r\n\ufeff", [220, 201, 198, 3225]],
    [" \ufeffx", [75780, 87]],
    ["a\u0085 b", [264, 126, 227, 293]],
    ["Hi there", [21018, 1052]],
  ],
  "Split MergedWithPrevious": [
    ["a b  c ", [64, 220, 65, 220, 220, 66, 220]],
    ["  lead", [220, 220, 26060]],
    ["one two", [603, 220, 19789]],
  ],
  "Split MergedWithNext": [
    ["a b  c ", [64, 293, 256, 66, 220]],
    ["  lead", [256, 26060]],
    ["one two", [603, 1378]],
  ],
  "Split Contiguous": [
    ["a,,b..c!", [64, 10631, 65, 496, 66, 0]],
    ["...x", [1112, 87]],
    ["x?!", [87, 25984]],
  ],
  "Split Removed": [
    ["a b  c ", [64, 65, 66]],
    ["\u0085x\ufeffy", [87, 3225, 88]],
  ],
  "Split inverted, Isolated": [
    ["ab12cd", [370, 16, 17, 4385]],
    ["12 ab", [16, 17, 220, 370]],
    ["x", [87]],
  ],
  "a Split that leaves gaps, then Whitespace": [
    ["naïve 12345 x_y", [3376, 171, 586, 16, 17, 18, 19, 20, 87, 4178]],
    ["\u0085x", [87]],
  ],
  "WhitespaceSplit, then ByteLevel": [
    ["a\u0085 b", [64, 65]],
    ["a\ufeff b", [64, 3225, 65]],
  ],
  "BertPreTokenizer, then ByteLevel": [
    ["Hello, world! $5 + ¿qué?", [
      9707,
      11,
      14615,
      0,
      3,
      20,
      10,
      30182,
      63491,
      30,
    ]],
    [" \ufeff a\u0085b ", [3225, 64, 65]],
  ],
  "NFD, StripAccents, Strip and NFKC normalizers": [
    ["  café ﬁ ①  ", [924, 1859, 9136, 220, 16]],
    ["\u0085 x \ufeff", [87, 75780]],
  ],
  "added tokens that strip and are normalized, behind Lowercase": [
    ["a \u0085<|endoftext|>\u0085 b", [64, 151643, 65]],
    ["ΟΔΟΣ Σ", [27554, 85386, 27554, 43928, 47723]],
    ["x <|im_start|>  y", [87, 220, 151644, 220, 379]],
  ],
  "a normalized added token that only BPE makes": [
    [" hello", [23811]],
    ["say hello hello", [36790, 23811, 23811]],
    ["Qhello hello", [151669, 23811]],
  ],
  "single_word added tokens": [
    ["hello", [14990]],
    ["say hello!", [36790, 220, 14990, 0]],
    ["hellothere", [14990, 18532]],
    ["ahello", [1466, 4791]],
    ["héllo hello_x", [71, 18503, 385, 23811, 3212]],
  ],
  "unknown tokens fused within a word, behind Whitespace": [
    ["é é café \u{1f600} \u{1f600}", [165, 165, 68796, 165, 0, 0]],
    ["中文 分词", [0, 0]],
    ["éé!é", [165, 165, 0, 165]],
  ],
  "unknown tokens fused, the unknown token a digit": [
    ["1111", [16, 16, 16, 16]],
    ["a 11 1 x1", [64, 220, 16, 16, 220, 16, 856, 16]],
    ["121", [16, 17, 16]],
  ],
  "ignore_merges, and a Bert post-processor": [
    ["Hello world", [9707, 1879]],
    ["", []],
  ],
  "Llama 2's normalizers, no pre-tokenizer": [
    ["Hello world", [26352, 1902]],
    [" lead", [138, 40227]],
    ["a  b", [496, 138, 236763]],
  ],
  "byte fallback without 4-byte leads, unknown tokens not fused": [
    ["\u{10348}ꙮ x", [472, 391, 412, 3, 1123]],
    ["\u{10348}\u{10348}y", [3, 3, 236762]],
    ["\u{1d11e}", [246859]],
  ],
  "a WordLevel model behind Whitespace": [
    ["hello world!", [1, 2, 3]],
    ["café hello", [4, 1]],
    ["naïve", [0]],
  ],
};

/** The ids of the library's public encode and of loadTokenizer() over the corpus, with and without special tokens. */
function assertLibraryIds(
  json: TokenizerJson,
  config: Record<string, unknown>,
  seed: number,
): void {
  const ours = loadTokenizer({
    tokenizerJson: structuredClone(json),
    tokenizerConfig: JSON.stringify(config),
  });
  const library = new Tokenizer(structuredClone(json), config);
  for (const text of mixedTexts(seed, ours.addedTokens)) {
    for (const addSpecialTokens of [false, true]) {
      const expected = library.encode(text, {
        add_special_tokens: addSpecialTokens,
      }).ids;
      deepStrictEqual(ours.encode(text, { addSpecialTokens }), expected);
      strictEqual(ours.count(text, { addSpecialTokens }), expected.length);
    }
  }
}

Deno.test("loadTokenizer() encodes the four families as the library does", async (t) => {
  for (const [i, files] of MODEL_FILES.entries()) {
    await t.step(files.family, async () => {
      const json = await familyJson(files.family);
      ok(buildPipeline(structuredClone(json)), "the engine runs it itself");
      assertLibraryIds(json, { ...files.config }, 100 + i);
    });
  }
});

Deno.test("loadTokenizer() gives the Rust crate's ids for other tokenizer.json shapes", async (t) => {
  for (const shape of TOKENIZER_SHAPES) {
    await t.step(shape.name, async () => {
      const json = shape.change(await familyJson(shape.family));
      ok(buildPipeline(structuredClone(json)), "the engine runs it itself");
      const tokenizer = loadTokenizer({ tokenizerJson: json });
      const expected = CRATE_IDS[shape.name]!;
      deepStrictEqual(
        expected.map(([text]) => text),
        shape.texts,
        "every text of the shape has the crate's ids here",
      );
      for (const [text, ids] of expected) {
        deepStrictEqual(
          tokenizer.encode(text, { addSpecialTokens: false }),
          ids,
          JSON.stringify(text),
        );
      }
    });
  }
});

Deno.test("loadTokenizer() encodes shapes the library follows the crate on as the library does", async (t) => {
  const followed = [
    "Split Removed",
    "ignore_merges, and a Bert post-processor",
    "Llama 2's normalizers, no pre-tokenizer",
  ];
  for (const [i, name] of followed.entries()) {
    await t.step(name, async () => {
      const shape = TOKENIZER_SHAPES.find((shape) => shape.name === name)!;
      assertLibraryIds(shape.change(await familyJson(shape.family)), {}, 7 + i);
    });
  }
});

Deno.test("loadTokenizer() throws an EngineError where the crate fails: an unknown token outside the vocabulary", async () => {
  const json = await familyJson("qwen3");
  const tokenizer = loadTokenizer({
    tokenizerJson: {
      ...json,
      model: { ...json.model as object, unk_token: "<none>" },
      pre_tokenizer: { type: "Whitespace" },
    },
  });
  deepStrictEqual(tokenizer.encode("hi", { addSpecialTokens: false }), [6023]);
  try {
    tokenizer.encode("\u{1F600}", { addSpecialTokens: false });
    throw new Error("no error");
  } catch (error) {
    strictEqual((error as Error).name, "EngineError");
    ok(/unk_token/.test((error as Error).message));
  }
});
