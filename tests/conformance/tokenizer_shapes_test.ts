// Tokenizes a large varied corpus with loadTokenizer() and with the native
// Rust `tokenizers` binding (npm:tokenizers), for every shape of
// tests/_kit/tokenizer_shapes.ts (other pre-tokenizers and Split
// behaviors, normalizers, added-token flags, unknown tokens, byte
// fallback, WordLevel), and requires the same ids, or an error from both.
// Texts that are not well-formed UTF-16 (lone surrogates) are left out:
// the binding replaces them with U+FFFD before the crate sees them, and
// vLLM's Python cannot hand them to the crate at all.
import { deepStrictEqual } from "node:assert/strict";
import { loadTokenizer } from "../../packages/engine/src/tokenizer/tokenizer.ts";
import { mixedTexts } from "../_kit/tokenizer_corpus.ts";
import { familyJson, TOKENIZER_SHAPES } from "../_kit/tokenizer_shapes.ts";
import { nativeTokenizer } from "./_oracles.ts";

/** The ids, or "error" when encoding throws. */
type Outcome = number[] | "error";

Deno.test("loadTokenizer() tokenizes every tokenizer.json shape as the Rust tokenizers crate", async (t) => {
  for (const [i, shape] of TOKENIZER_SHAPES.entries()) {
    await t.step(shape.name, async () => {
      const json = shape.change(await familyJson(shape.family));
      const ours = loadTokenizer({ tokenizerJson: structuredClone(json) });
      const native = await nativeTokenizer({ json });
      const texts = [...shape.texts, ...mixedTexts(200 + i, ours.addedTokens)]
        .filter((text) => text.isWellFormed());
      let same = 0;
      for (const text of texts) {
        for (const addSpecialTokens of [false, true]) {
          let expected: Outcome;
          try {
            expected = await native.encode(text, addSpecialTokens);
          } catch {
            expected = "error";
          }
          let actual: Outcome;
          try {
            actual = ours.encode(text, { addSpecialTokens });
          } catch (error) {
            if ((error as Error).name !== "EngineError") throw error;
            actual = "error";
          }
          deepStrictEqual(actual, expected, JSON.stringify(text.slice(0, 80)));
          same++;
        }
      }
      console.log(`${shape.name}: ${same}/${same} identical`);
    });
  }
});
