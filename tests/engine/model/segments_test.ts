// Covers: packages/engine/src/model/segments.ts, packages/engine/src/model/prefix.ts
import {
  deepStrictEqual,
  notStrictEqual,
  strictEqual,
} from "node:assert/strict";
import {
  isSegmentationSafe,
  splitAtAddedTokens,
} from "../../../packages/engine/src/model/segments.ts";
import { PrefixCounter } from "../../../packages/engine/src/model/prefix.ts";
import { loadTokenizer } from "../../../packages/engine/src/tokenizer/tokenizer.ts";
import { MODEL_FILES } from "../../_kit/model_files.ts";

const t = (text: string) => ({ text, added: true });
const s = (text: string) => ({ text, added: false });

Deno.test("splitAtAddedTokens() splits as the tokenizer does", async (t2) => {
  const tokens = Object.freeze(["<|im_start|>", "<|im_end|>", "\n", "\n\n"]);
  await t2.step("no tokens in the list or in the text", () => {
    deepStrictEqual(splitAtAddedTokens("plain text", Object.freeze([])), [
      s("plain text"),
    ]);
    deepStrictEqual(splitAtAddedTokens("", Object.freeze([])), []);
    deepStrictEqual(splitAtAddedTokens("plain text", tokens), [
      s("plain text"),
    ]);
    deepStrictEqual(splitAtAddedTokens("", tokens), []);
  });
  await t2.step("tokens at the start, at the end, and adjacent", () => {
    deepStrictEqual(
      splitAtAddedTokens("<|im_start|><|im_end|>a<|im_end|>", tokens),
      [t("<|im_start|>"), t("<|im_end|>"), s("a"), t("<|im_end|>")],
    );
    deepStrictEqual(splitAtAddedTokens("<|im_end|>", tokens), [
      t("<|im_end|>"),
    ]);
  });
  await t2.step("the longest token at the leftmost position wins", () => {
    deepStrictEqual(splitAtAddedTokens("a\n\n\nb", tokens), [
      s("a"),
      t("\n\n"),
      t("\n"),
      s("b"),
    ]);
    const overlapping = Object.freeze(["abc", "cde", "bcdef"]);
    deepStrictEqual(splitAtAddedTokens("xabcdef", overlapping), [
      s("x"),
      t("abc"),
      s("def"),
    ]);
  });
  await t2.step("regex characters and partial tokens are plain text", () => {
    deepStrictEqual(
      splitAtAddedTokens("<|im_|><|im_end|>.*", tokens),
      [s("<|im_|>"), t("<|im_end|>"), s(".*")],
    );
    deepStrictEqual(splitAtAddedTokens("a.b", Object.freeze([".", "(?"])), [
      s("a"),
      t("."),
      s("b"),
    ]);
  });
  await t2.step("astral characters are matched by code units", () => {
    deepStrictEqual(splitAtAddedTokens("😀x😀", Object.freeze(["😀"])), [
      t("😀"),
      s("x"),
      t("😀"),
    ]);
  });
});

const BASE = {
  model: { type: "BPE", vocab: {}, merges: [] },
  normalizer: null,
  pre_tokenizer: { type: "ByteLevel", add_prefix_space: false },
  post_processor: null,
  decoder: null,
};
const token = (content: string, flags: Record<string, unknown> = {}) => ({
  id: 0,
  content,
  single_word: false,
  lstrip: false,
  rstrip: false,
  normalized: false,
  special: true,
  ...flags,
});

Deno.test("isSegmentationSafe() refuses what does not count piece by piece", async (t2) => {
  const safe = (json: Record<string, unknown>) =>
    isSegmentationSafe({ ...BASE, added_tokens: [token("<s>")], ...json });
  await t2.step("byte-level BPE is safe", () => {
    strictEqual(safe({}), true);
    strictEqual(safe({ normalizer: { type: "NFC" } }), true);
  });
  await t2.step("added-token flags", () => {
    for (const flag of ["lstrip", "rstrip", "single_word"]) {
      strictEqual(
        safe({ added_tokens: [token("<s>", { [flag]: true })] }),
        false,
        flag,
      );
    }
    const normalised = [token("<s>", { normalized: true })];
    strictEqual(safe({ added_tokens: normalised }), true, "no normaliser");
    strictEqual(
      safe({ added_tokens: normalised, normalizer: { type: "NFC" } }),
      false,
    );
    // Unstated, a non-special token is normalised.
    const unstated = { ...token("<x>", { special: false }) } as Record<
      string,
      unknown
    >;
    delete unstated.normalized;
    strictEqual(
      safe({ added_tokens: [unstated], normalizer: { type: "NFC" } }),
      false,
    );
  });
  await t2.step("normalised tokens behind an identity normaliser", () => {
    const normalizer = { type: "Sequence", normalizers: [] };
    const separate = [token("<a>"), token("<b>", { normalized: true })];
    strictEqual(safe({ normalizer, added_tokens: separate }), true);
    for (const [a, b] of [["<a>", "a><b"], ["<ab>", "b"], ["x<", "<y"]]) {
      const overlapping = [token(a!), token(b!, { normalized: true })];
      strictEqual(
        safe({ normalizer, added_tokens: overlapping }),
        false,
        `${a} ${b}`,
      );
    }
  });
  await t2.step("Metaspace prepending to the first piece only", () => {
    const metaspace = (scheme?: string) => ({
      pre_tokenizer: {
        type: "Sequence",
        pretokenizers: [{
          type: "Metaspace",
          replacement: "▁",
          ...(scheme ? { prepend_scheme: scheme } : {}),
        }],
      },
    });
    strictEqual(safe(metaspace("first")), false);
    strictEqual(safe(metaspace()), false);
    strictEqual(safe(metaspace("always")), true);
    strictEqual(safe(metaspace("never")), true);
  });
  await t2.step("unknown steps and malformed files", () => {
    strictEqual(safe({ pre_tokenizer: { type: "SomethingNew" } }), false);
    strictEqual(safe({ normalizer: { type: "Sequence" } }), false);
    strictEqual(safe({ added_tokens: undefined }), false);
    strictEqual(safe({ added_tokens: [{ id: 1 }] }), false);
    strictEqual(isSegmentationSafe(null), false);
    strictEqual(isSegmentationSafe([]), false);
  });
  await t2.step("the four model families are safe", async () => {
    for (const model of MODEL_FILES) {
      const json = JSON.parse(await Deno.readTextFile(model.tokenizerPath));
      strictEqual(isSegmentationSafe(json), true, model.family);
    }
  });
});

Deno.test("counting by pieces would miscount the tokenizers isSegmentationSafe refuses", () => {
  // Metaspace "first" prefixes only the first piece with "▁": counted alone,
  // every piece gets one, so refusing is what keeps counts exact.
  const json = {
    ...BASE,
    model: {
      type: "BPE",
      vocab: { "▁": 0, a: 1, "<s>": 2 },
      merges: [],
    },
    pre_tokenizer: {
      type: "Metaspace",
      replacement: "▁",
      prepend_scheme: "first",
    },
    added_tokens: [{ ...token("<s>"), id: 2 }],
  };
  strictEqual(isSegmentationSafe(json), false);
  const tokenizer = loadTokenizer({ tokenizerJson: JSON.stringify(json) });
  const full = tokenizer.count("a<s>a", { addSpecialTokens: false });
  strictEqual(full, 4);
  notStrictEqual(
    new PrefixCounter(tokenizer, "sha", new Map()).count("a<s>a"),
    full,
  );
});
