/**
 * BpeMerges.merge() against the textbook definition of BPE (repeatedly the
 * adjacent pair of lowest rank, the leftmost among equals, merged), on
 * words of every length: up to 64 symbols it scans, longer ones go through
 * a heap.
 *
 * @module
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { BpeMerges } from "../../../packages/engine/src/tokenizer/bpe_merges.ts";
import { mulberry32 } from "../../_kit/prng.ts";
import { familyJson } from "../../_kit/tokenizer_shapes.ts";
import { ProseGenerator } from "../../../bench/_local_bench_text.ts";

/** Merges a word's strings by the definition, one merge at a time. */
function textbook(
  word: string[],
  ranks: ReadonlyMap<string, number>,
): string[] {
  for (;;) {
    let best = Infinity;
    let at = -1;
    for (let i = 0; i + 1 < word.length; i++) {
      const rank = ranks.get(`${word[i]} ${word[i + 1]}`) ?? Infinity;
      if (rank < best) {
        best = rank;
        at = i;
      }
    }
    if (at < 0) return word;
    word.splice(at, 2, word[at]! + word[at + 1]!);
  }
}

Deno.test("BpeMerges.merge() merges as BPE is defined, short words and long", async () => {
  const json = await familyJson("qwen3");
  const model = json.model as {
    vocab: Record<string, number>;
    merges: [string, string][];
  };
  const vocab = new Map(Object.entries(model.vocab));
  const strings: string[] = [];
  for (const [text, id] of vocab) strings[id] = text;
  const merges = BpeMerges.build(vocab, strings, model.merges)!;
  const ranks = new Map<string, number>();
  model.merges.forEach(([a, b], rank) => ranks.set(`${a} ${b}`, rank));
  const rand = mulberry32(5);
  const prose = new ProseGenerator(5).text(20_000).replaceAll(" ", "\u0120")
    .replaceAll("\n", "\u010a");
  // Runs of one character or two, where equal ranks compete.
  const runs = ["\u0120", "=", "ab", "\u010a", "-", "0", "aa\u0120"];
  let long = 0;
  for (let n = 0; n < 400; n++) {
    const length = 1 + Math.floor(rand() * (n % 4 === 0 ? 400 : 70));
    const start = Math.floor(rand() * (prose.length - length));
    const chars = n % 3 === 0
      ? [...runs[n % runs.length]!.repeat(length)]
      : [...prose.slice(start, start + length)];
    const symbols = Int32Array.from(chars, (char) => vocab.get(char)!);
    const left = merges.merge(symbols, symbols.length);
    deepStrictEqual(
      Array.from(symbols.subarray(0, left), (id) => strings[id]),
      textbook(chars, ranks),
    );
    if (length > 64) long++;
  }
  strictEqual(long > 50, true, "long words took the heap");
});

Deno.test("BpeMerges.build() refuses merges of strings outside the vocabulary", () => {
  const vocab = new Map([["a", 0], ["b", 1], ["ab", 2]]);
  strictEqual(
    BpeMerges.build(vocab, ["a", "b", "ab"], [["a", "c"]]),
    undefined,
  );
  const merges = BpeMerges.build(vocab, ["a", "b", "ab"], [["a", "b"]])!;
  const symbols = Int32Array.of(0, 1);
  strictEqual(merges.merge(symbols, 2), 1);
  strictEqual(symbols[0], 2);
});
