// Tokenizes texts full of the whitespace characters where JavaScript's \s
// and the Rust crate's whitespace differ (U+FEFF, U+0085) with the local
// tokenizer and with the native Rust `tokenizers` binding
// (npm:tokenizers, through ./_oracles.ts), behind each pre-tokenizer that splits on
// whitespace, and requires the same ids.
import { deepStrictEqual } from "node:assert/strict";
import { loadTokenizer } from "../../packages/engine/src/tokenizer/tokenizer.ts";
import { MODEL_FILES } from "../_kit/model_files.ts";
import { nativeEncode } from "./_oracles.ts";

const QWEN3 = MODEL_FILES.find((model) => model.family === "qwen3")!;

const TEXTS = [
  "\r\n\ufeff",
  "a\ufeff b",
  "x \ufeff\ufeff y",
  "\u0085x",
  "a\u0085 b",
  "\ufeff",
  "hi\n\ufeff\n",
  " \ufeffx",
  "a \u0085\u0085 b",
  "naïve café 東京 x_y ٣ ½",
  "a\u00a0\u00a0b\u3000c\u2028d",
  "\ufeff\ufeff  \ufeff",
  "def f():\n\t\u0085return 1\r\n",
  "\u200b\u2060zero\u200dwidth",
];

const BYTE_LEVEL = {
  type: "ByteLevel",
  add_prefix_space: false,
  trim_offsets: true,
  use_regex: true,
};
const bytes = { ...BYTE_LEVEL, use_regex: false };
const PRE_TOKENIZERS: Record<string, unknown> = {
  "ByteLevel (use_regex)": BYTE_LEVEL,
  "WhitespaceSplit": {
    type: "Sequence",
    pretokenizers: [{ type: "WhitespaceSplit" }, bytes],
  },
  "Whitespace": {
    type: "Sequence",
    pretokenizers: [{ type: "Whitespace" }, bytes],
  },
  "Split (Qwen3's own)": null,
};

function nativeIds(tokenizerJson: unknown): Promise<number[][]> {
  return nativeEncode({
    tokenizer: { json: tokenizerJson },
    texts: TEXTS,
    addSpecialTokens: false,
  });
}

Deno.test("loadTokenizer() splits on whitespace as the Rust tokenizers crate", async (t) => {
  const original = JSON.parse(await Deno.readTextFile(QWEN3.tokenizerPath));
  for (const [name, preTokenizer] of Object.entries(PRE_TOKENIZERS)) {
    await t.step(name, async () => {
      const json = preTokenizer === null
        ? original
        : { ...original, pre_tokenizer: preTokenizer };
      const tokenizer = loadTokenizer({ tokenizerJson: json });
      const ours = TEXTS.map((text) =>
        tokenizer.encode(text, { addSpecialTokens: false })
      );
      deepStrictEqual(ours, await nativeIds(json));
    });
  }
});
