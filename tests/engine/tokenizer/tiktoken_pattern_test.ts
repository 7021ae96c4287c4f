// tiktoken split patterns translated to JavaScript RegExps.
// Each construct of the tiktoken split patterns matches as the Rust regex
// crate (under fancy_regex) reads it, and any other construct is refused.
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { tiktokenPattern } from "../../../packages/engine/src/tokenizer/tiktoken_pattern.ts";
import { KIMI_PATTERN } from "../../../packages/engine/src/tokenizer/kimi.ts";

const split = (pattern: string, text: string) =>
  text.match(tiktokenPattern(pattern)!) ?? [];

Deno.test("tiktokenPattern() reads \\s as Unicode White_Space", () => {
  // U+0085 is White_Space, U+FEFF is not: JavaScript's \s says the opposite.
  deepStrictEqual(split(String.raw`\s+|\S+`, "a\u0085b\ufeffc"), [
    "a",
    "\u0085",
    "b\ufeffc",
  ]);
});

Deno.test("tiktokenPattern() spells (?i:...) out with the crate's case folds", () => {
  deepStrictEqual(split(String.raw`(?i:'s|'ll)`, "'s 'S '\u017f 'lL 'x"), [
    "'s",
    "'S",
    "'\u017f",
    "'lL",
  ]);
});

Deno.test("tiktokenPattern() reads \\p{Han} as the script and && as intersection", () => {
  // U+3001 has Han among its script extensions, not as its script.
  deepStrictEqual(split(String.raw`[\p{Han}]+`, "中文、漢字"), [
    "中文",
    "漢字",
  ]);
  deepStrictEqual(
    split(String.raw`[\p{L}&&[^\p{Han}]]+`, "abc中ひらがなé"),
    ["abc", "ひらがなé"],
  );
});

Deno.test("tiktokenPattern() refuses constructs it does not translate", () => {
  for (
    const pattern of [
      String.raw`\d+`,
      String.raw`(?<=a)b`,
      String.raw`[a-z]+`,
      String.raw`\p{Greek}`,
      String.raw`(?i:a+)`,
      "[abc",
    ]
  ) strictEqual(tiktokenPattern(pattern), undefined, pattern);
});

Deno.test("KIMI_PATTERN splits Han runs, cased words with contractions, digits by three", () => {
  deepStrictEqual(
    "我们的HTTPServer's 12345 you'RE\n\n  x".match(KIMI_PATTERN),
    ["我们的", "HTTPServer's", " ", "123", "45", " you'RE", "\n\n", " ", " x"],
  );
});
