// Covers: packages/engine/src/tokenizer/pre_tokenizers.ts, packages/engine/src/tokenizer/patterns.ts, packages/engine/src/tokenizer/tokenizer.ts
// The pre-tokenizers split on the Rust crate's whitespace (Unicode
// White_Space: U+0085 in, U+FEFF out), not on JavaScript's \s. The ids are
// the Rust tokenizers crate's (tests/conformance/tokenizer_whitespace_test.ts
// compares with it directly).
import { deepStrictEqual } from "node:assert/strict";
import { loadTokenizer } from "../../../packages/engine/src/tokenizer/tokenizer.ts";
import { MODEL_FILES } from "../../_kit/model_files.ts";

const QWEN3 = MODEL_FILES.find((model) => model.family === "qwen3")!;
const BYTE_LEVEL = {
  type: "ByteLevel",
  add_prefix_space: false,
  trim_offsets: true,
  use_regex: true,
};

/** Qwen3's vocabulary behind another pre-tokenizer. */
function withPreTokenizer(preTokenizer: unknown) {
  const json = JSON.parse(Deno.readTextFileSync(QWEN3.tokenizerPath));
  json.pre_tokenizer = preTokenizer;
  return loadTokenizer({ tokenizerJson: json });
}

const ids = (tokenizer: ReturnType<typeof loadTokenizer>, text: string) =>
  tokenizer.encode(text, { addSpecialTokens: false });

Deno.test("loadTokenizer() splits on the Rust crate's whitespace", async (t) => {
  await t.step("ByteLevel with its own regex: U+FEFF is not whitespace", () => {
    const tokenizer = withPreTokenizer(BYTE_LEVEL);
    deepStrictEqual(ids(tokenizer, "\r\n\ufeff"), [201, 198, 3225]);
    deepStrictEqual(ids(tokenizer, " \ufeffx"), [75780, 87]);
  });
  await t.step("WhitespaceSplit: U+0085 separates, U+FEFF is kept", () => {
    const tokenizer = withPreTokenizer({
      type: "Sequence",
      pretokenizers: [{ type: "WhitespaceSplit" }, {
        ...BYTE_LEVEL,
        use_regex: false,
      }],
    });
    deepStrictEqual(ids(tokenizer, "a\u0085 b"), [64, 65]);
    deepStrictEqual(ids(tokenizer, "a\ufeff b"), [64, 3225, 65]);
  });
  await t.step("Whitespace: words are Unicode words", () => {
    const tokenizer = withPreTokenizer({
      type: "Sequence",
      pretokenizers: [{ type: "Whitespace" }, {
        ...BYTE_LEVEL,
        use_regex: false,
      }],
    });
    deepStrictEqual(ids(tokenizer, "\u0085x"), [87]);
    deepStrictEqual(
      ids(tokenizer, "naïve"),
      withPreTokenizer({ ...BYTE_LEVEL, use_regex: false }).encode("naïve", {
        addSpecialTokens: false,
      }),
    );
  });
});
