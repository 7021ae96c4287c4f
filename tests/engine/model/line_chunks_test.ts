// Line chunks count exactly: for each family whose tokenizer.json passes
// isLineChunkSafe, any text counts the same whole as cut after every line
// feed that a non-whitespace character follows (a superset of the cuts
// lineChunkEnds makes), on adversarial text: every kind of whitespace and
// line break, combining marks, digits, CJK, punctuation before line feeds.
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import {
  isLineChunkSafe,
  lineChunkEnds,
} from "../../../packages/engine/src/model/line_chunks.ts";
import { loadTokenizer } from "../../../packages/engine/src/tokenizer/tokenizer.ts";
import { MODEL_FILES } from "../../_kit/model_files.ts";
import { mulberry32 } from "../../_kit/prng.ts";

const SEED = 20261130;
const TEXTS = 2500;

const ALPHABET = [
  "\n",
  "\n",
  "\n\n",
  "\r\n",
  "\r",
  " ",
  "  ",
  "\t",
  "\u00a0",
  "\u3000",
  "\u2028",
  "\ufeff",
  "\u000b",
  "\u000c",
  "\u0085",
  "a",
  "Word",
  " the",
  "'s",
  "'LL",
  "e\u0301",
  "\u0301",
  "\u0308x",
  "1",
  "12345",
  "٣",
  "東京",
  "ひらがな",
  "한국어",
  "😀",
  "👩‍💻",
  ".",
  "!!",
  "#",
  "#define",
  "```",
  "{",
  "-->",
  "_x",
  "ﬁ",
  "Å",
];

function randomText(random: () => number): string {
  let out = "";
  for (let n = 1 + Math.floor(random() * 40); n > 0; n--) {
    out += ALPHABET[Math.floor(random() * ALPHABET.length)];
  }
  return out;
}

/** Every cut the safety argument covers: after each line feed a non-whitespace character follows. */
const SAFE_CUT = /\n(?=[^\s\p{White_Space}])/gu;
/** A cut the argument does not cover: after a line feed a space follows. */
const UNSAFE_CUT = /\n(?= )/g;

function everyCut(text: string, at = SAFE_CUT): string[] {
  const parts: string[] = [];
  let start = 0;
  for (const match of text.matchAll(at)) {
    parts.push(text.slice(start, match.index + 1));
    start = match.index + 1;
  }
  parts.push(text.slice(start));
  return parts;
}

Deno.test("isLineChunkSafe() accepts the known pre-tokenizers and nothing near them", async (t) => {
  const verdicts: Record<string, boolean> = {};
  for (const model of MODEL_FILES) {
    verdicts[model.family] = isLineChunkSafe(
      JSON.parse(await Deno.readTextFile(model.tokenizerPath)),
    );
  }
  // Gemma 3 replaces spaces and splits on nothing: a line feed is no boundary.
  deepStrictEqual(verdicts, {
    qwen3: true,
    llama3: true,
    gemma3: false,
    deepseek_v3: true,
  });
  const qwen = JSON.parse(
    await Deno.readTextFile(
      MODEL_FILES.find((m) => m.family === "qwen3")!.tokenizerPath,
    ),
  );
  const variant = (edit: (json: typeof qwen) => void) => {
    const copy = structuredClone(qwen);
    edit(copy);
    return isLineChunkSafe(copy);
  };
  await t.step("a pattern one alternative away", () => {
    strictEqual(
      variant((j) => {
        // GPT-2's order: the lookahead alternative first.
        j.pre_tokenizer.pretokenizers[0].pattern.Regex = j.pre_tokenizer
          .pretokenizers[0].pattern.Regex.replace(
            "\\s*[\\r\\n]+|\\s+(?!\\S)",
            "\\s+(?!\\S)|\\s*[\\r\\n]+",
          );
      }),
      false,
    );
  });
  await t.step("other steps", () => {
    strictEqual(
      variant((
        j,
      ) => (j.pre_tokenizer.pretokenizers[1].add_prefix_space = true)),
      false,
    );
    strictEqual(
      variant((j) => (j.pre_tokenizer.pretokenizers[0].behavior = "Removed")),
      false,
    );
    strictEqual(variant((j) => (j.normalizer = { type: "NFKC" })), false);
    strictEqual(variant((j) => (j.model.type = "Unigram")), false);
    strictEqual(variant((j) => (j.pre_tokenizer.pretokenizers.pop())), false);
    strictEqual(variant((j) => (j.normalizer = null)), true);
  });
});

Deno.test("line chunks count as the whole text, per safe family", async (t) => {
  for (const model of MODEL_FILES) {
    const tokenizerJson = await Deno.readTextFile(model.tokenizerPath);
    if (!isLineChunkSafe(JSON.parse(tokenizerJson))) continue;
    await t.step(model.family, () => {
      const tokenizer = loadTokenizer({ tokenizerJson });
      const count = (text: string) =>
        tokenizer.count(text, { addSpecialTokens: false });
      const random = mulberry32(SEED);
      const sum = (parts: string[]) =>
        parts.reduce((total, part) => total + count(part), 0);
      let cut = 0;
      let unsafeWrong = 0;
      for (let i = 0; i < TEXTS; i++) {
        const text = randomText(random);
        const parts = everyCut(text);
        cut += parts.length - 1;
        if (sum(everyCut(text, UNSAFE_CUT)) !== count(text)) unsafeWrong++;
        strictEqual(
          sum(parts),
          count(text),
          `${model.family}: ${JSON.stringify(text)} cut as ${
            JSON.stringify(parts)
          }`,
        );
      }
      console.log(
        `line chunks: ${model.family}: ${TEXTS} texts, ${cut} cuts, every sum equal; cutting before a space instead miscounts ${unsafeWrong} texts`,
      );
      // The check has teeth: a cut the argument does not cover is caught.
      ok(unsafeWrong > 0);
      ok(cut > TEXTS / 2, `only ${cut} cuts`);
    });
  }
});

Deno.test("lineChunkEnds() cuts after the head, then where the line's own text says", () => {
  deepStrictEqual(lineChunkEnds("no line feed"), []);
  deepStrictEqual(lineChunkEnds("head\n  indented\n"), []);
  deepStrictEqual(lineChunkEnds("head\nbody"), [5]);
  // "abc\n" (4) is cut after, "ab\n" (3) is not.
  deepStrictEqual(lineChunkEnds("h\nabc\nab\nz"), [2, 6]);
  // The same body after another head is cut at the same places in it.
  const random = mulberry32(SEED);
  for (let i = 0; i < 200; i++) {
    const body = randomText(random).replace(/^\s+/, "") + "\nx";
    const a = lineChunkEnds(`assistant\n${body}`).slice(1).map((e) => e - 10);
    const b = lineChunkEnds(`\n\n${body}`).slice(1).map((e) => e - 2);
    deepStrictEqual(a, b, JSON.stringify(body));
  }
});
