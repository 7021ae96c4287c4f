// Covers: packages/engine/src/tokenizer/fast_encode.ts, packages/engine/src/tokenizer/tokenizer.ts, packages/engine/src/tokenizer/whitespace.ts
/**
 * loadTokenizer()'s own encoder against the library's path: the stock
 * `@huggingface/tokenizers` with only the whitespace rewrite both read, on
 * a large varied corpus, for the real model folders and for variants of
 * them that take the encoder's other branches.
 *
 * @module
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { Tokenizer } from "@huggingface/tokenizers";
import { loadTokenizer } from "../../../packages/engine/src/tokenizer/tokenizer.ts";
import { useRustWhitespace } from "../../../packages/engine/src/tokenizer/whitespace.ts";
import { MODEL_FILES } from "../../_kit/model_files.ts";
import { mulberry32, type Rand } from "../../_kit/prng.ts";
import { PLAIN_TEXTS, textsWithTokens } from "../../_kit/tokenizer_corpus.ts";
import { ProseGenerator } from "../../../bench/_local_bench_text.ts";

const PUNCTUATION = [..."!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~«»¿¡…—–·"];
const SPACES = [" ", "  ", "\t", "\n", "\n\n", "\r\n", "\u00a0", "\u3000"]
  .concat(["\u0085", "\ufeff", " \n ", "    ", "\u2028", "\u200b"]);
const SCRIPTS = [
  "café",
  "naïve",
  "Ångström",
  "straße",
  "中文分词",
  "日本語です",
  "한국어",
  "русский",
  "Ελληνικά",
  "العربية",
  "हिन्दी",
  "ไทย",
  "עברית",
  "ﬁ",
  "①",
];
const EMOJI = ["😀", "👍🏽", "👩‍💻", "🇫🇷", "❤️", "🧑🏿‍🚀", "👨‍👩‍👧‍👦"];
const LETTERS = "etaoinshrdlucmfwypvbgkjqxz";
const CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL"];

function pick<T>(rand: Rand, list: readonly T[]): T {
  return list[Math.floor(rand() * list.length)]!;
}

/** A word of fresh letters, sometimes capitalized or longer than any scan limit. */
function freshWord(rand: Rand): string {
  const long = rand() < 0.05;
  const length = long
    ? 40 + Math.floor(rand() * 60)
    : 1 + Math.floor(rand() * 9);
  let word = "";
  for (let i = 0; i < length; i++) word += pick(rand, [...LETTERS]);
  return rand() < 0.2 ? word[0]!.toUpperCase() + word.slice(1) : word;
}

/** Texts mixing everything a pre-tokenizer and a BPE model branch on. */
function corpus(seed: number, addedTokens: readonly string[]): string[] {
  const rand = mulberry32(seed);
  const prose = new ProseGenerator(seed);
  const texts: string[] = [...PLAIN_TEXTS];
  texts.push(...textsWithTokens(addedTokens.slice(0, 6)));
  for (let t = 0; t < 120; t++) {
    let text = rand() < 0.3 ? prose.text(200) : "";
    const parts = 5 + Math.floor(rand() * 60);
    for (let i = 0; i < parts; i++) {
      const roll = rand();
      if (roll < 0.35) text += freshWord(rand);
      else if (roll < 0.5) text += pick(rand, SPACES);
      else if (roll < 0.6) {
        text += pick(rand, PUNCTUATION).repeat(1 + Math.floor(rand() * 3));
      } else if (roll < 0.68) {
        text += String(
          Math.floor(rand() * 10 ** (1 + Math.floor(rand() * 12))),
        );
      } else if (roll < 0.76) {
        text += pick(rand, SCRIPTS).repeat(1 + Math.floor(rand() * 20));
      } else if (roll < 0.82) text += pick(rand, EMOJI);
      else if (roll < 0.86) text += pick(rand, CONTRACTIONS);
      else if (roll < 0.9 && addedTokens.length > 0) {
        text += pick(rand, addedTokens);
      } else if (roll < 0.93) {
        text += pick(rand, [..."aeé"]).repeat(30 + Math.floor(rand() * 120));
      } else text += " " + freshWord(rand);
    }
    texts.push(text);
  }
  // Fresh words past the word caches' 10,000 entries per generation, then again.
  const many = new ProseGenerator(seed + 1).text(120_000);
  texts.push(many, many.slice(50_000), "\ud800 lone \udc00 surrogates \ud83d");
  return texts;
}

/** The library's path: the stock tokenizer with the whitespace rewrite that loadTokenizer() applies too. */
function libraryPath(
  json: Record<string, unknown>,
  config: Record<string, unknown>,
) {
  const library = new Tokenizer(structuredClone(json), config);
  useRustWhitespace(
    json.pre_tokenizer,
    (library as unknown as { pre_tokenizer: unknown }).pre_tokenizer,
  );
  return library;
}

function assertSameIds(
  json: Record<string, unknown>,
  config: Record<string, unknown>,
  seed: number,
  extraTexts: readonly string[] = [],
): void {
  const fast = loadTokenizer({
    tokenizerJson: structuredClone(json),
    tokenizerConfig: JSON.stringify(config),
  });
  const library = libraryPath(json, config);
  for (const text of [...extraTexts, ...corpus(seed, fast.addedTokens)]) {
    for (const addSpecialTokens of [false, true]) {
      const expected = library.encode(text, {
        add_special_tokens: addSpecialTokens,
      }).ids;
      deepStrictEqual(fast.encode(text, { addSpecialTokens }), expected);
      strictEqual(fast.count(text, { addSpecialTokens }), expected.length);
    }
  }
}

async function readModel(family: string) {
  const files = MODEL_FILES.find((model) => model.family === family)!;
  const json = JSON.parse(await Deno.readTextFile(files.tokenizerPath));
  return { json: json as Record<string, unknown>, config: { ...files.config } };
}

Deno.test("loadTokenizer() encodes as the library's path does", async (t) => {
  for (const [i, files] of MODEL_FILES.entries()) {
    await t.step(files.family, async () => {
      const { json, config } = await readModel(files.family);
      assertSameIds(json, config, 100 + i);
    });
  }
});

Deno.test("loadTokenizer() encodes as the library's path does for other shapes", async (t) => {
  const { json, config } = await readModel("qwen3");
  const model = json.model as Record<string, unknown>;
  const added = json.added_tokens as Record<string, unknown>[];
  const variant = (change: Record<string, unknown>) => ({ ...json, ...change });
  await t.step("ByteLevel with its own regex and a prefix space", () => {
    assertSameIds(
      variant({
        pre_tokenizer: {
          type: "ByteLevel",
          add_prefix_space: true,
          trim_offsets: true,
          use_regex: true,
        },
      }),
      config,
      7,
    );
  });
  await t.step("added tokens that strip and are normalized", () => {
    assertSameIds(
      variant({
        normalizer: { type: "Lowercase" },
        added_tokens: added.map((token, i) => ({
          ...token,
          lstrip: i % 2 === 0,
          rstrip: i % 3 === 0,
          normalized: i % 4 === 0,
          special: i % 4 !== 0,
        })),
      }),
      config,
      8,
    );
  });
  await t.step("a normalized added token that only BPE makes", () => {
    // The normalizer turns "Q" into the byte-level space, so the token's
    // normalized content "Ġhello" never occurs in the text, but BPE makes
    // it from " hello", and the library then gives the added token's id.
    assertSameIds(
      variant({
        normalizer: {
          type: "Replace",
          pattern: { String: "Q" },
          content: "\u0120",
        },
        added_tokens: [...added, {
          id: 151700,
          content: "Qhello",
          single_word: false,
          lstrip: false,
          rstrip: false,
          normalized: true,
          special: false,
        }],
      }),
      config,
      12,
      [" hello", "say hello hello", "Qhello hello"],
    );
  });
  await t.step("fuse_unk joining unknown words, not fused", () => {
    assertSameIds(
      variant({
        model: { ...model, unk_token: "<|endoftext|>", fuse_unk: true },
        normalizer: null,
        pre_tokenizer: { type: "Whitespace" },
      }),
      config,
      13,
      ["é é café 😀 😀", "中文 分词"],
    );
  });
  await t.step(
    "fuse_unk with the unknown token in the vocabulary, fused",
    () => {
      // Qwen3 splits digits one by one: "11" is two pieces, both "unknown".
      assertSameIds(
        variant({ model: { ...model, unk_token: "1", fuse_unk: true } }),
        config,
        14,
        ["1111", "a 11 1 x1", "121"],
      );
    },
  );
  await t.step("ignore_merges, and a Bert post-processor", () => {
    assertSameIds(
      variant({
        model: { ...model, ignore_merges: true },
        post_processor: {
          type: "BertProcessing",
          sep: ["<|im_end|>", 151645],
          cls: ["<|im_start|>", 151644],
        },
      }),
      config,
      9,
    );
  });
  await t.step("a Split that leaves gaps, then Whitespace (not fused)", () => {
    assertSameIds(
      variant({
        pre_tokenizer: {
          type: "Sequence",
          pretokenizers: [
            {
              type: "Split",
              pattern: { Regex: "\\p{N}{1,3}" },
              behavior: "Isolated",
              invert: false,
            },
            { type: "Whitespace" },
          ],
        },
      }),
      config,
      10,
    );
  });
  await t.step("merges missing, so that words fall back per symbol", () => {
    const merges = model.merges as unknown[];
    assertSameIds(
      variant({
        model: {
          ...model,
          // Words in the vocabulary that no merges make whole, for
          // ignore_merges; a repeated pair, which takes its last rank.
          ignore_merges: true,
          merges: [
            ...merges.filter((_, i) => i % 7 !== 3),
            ...merges.slice(0, 40),
          ],
          vocab: Object.fromEntries(
            Object.entries(model.vocab as Record<string, number>).filter((
              [, id],
            ) => id % 11 !== 5),
          ),
          unk_token: null,
        },
      }),
      config,
      11,
    );
  });
});
