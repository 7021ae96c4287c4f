/**
 * The tokenize server's ids of a growing conversation, encoded segment by
 * segment with earlier segments' ids kept, equal the whole render encoded at
 * once, for every model family whose tokenizer splits at its added tokens
 * first (`isSegmentationSafe`), over generated texts full of added tokens,
 * look-alikes, whitespace runs and mixed scripts.
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import { loadTokenizer } from "../../../packages/engine/src/tokenizer/tokenizer.ts";
import { isSegmentationSafe } from "../../../packages/engine/src/model/segments.ts";
import { SegmentIds } from "../../../packages/engine/src/model/segment_ids.ts";
import { MODEL_FILES } from "../../_kit/model_files.ts";
import { mulberry32 } from "../../_kit/prng.ts";
import { text } from "../../_kit/random_conversations.ts";

Deno.test("SegmentIds.encode() equals encoding the whole text, turn after turn", async (t) => {
  const safe: string[] = [];
  for (const model of MODEL_FILES) {
    const json = JSON.parse(await Deno.readTextFile(model.tokenizerPath));
    if (!isSegmentationSafe(json)) continue;
    safe.push(model.family);
    await t.step(model.family, async () => {
      const tokenizer = loadTokenizer({
        tokenizerJson: json,
        tokenizerConfig: await Deno.readTextFile(model.configPath),
      });
      const random = mulberry32(7);
      const added = tokenizer.addedTokens;
      const segments = new SegmentIds(tokenizer);
      for (let conversation = 0; conversation < 8; conversation++) {
        let render = "";
        for (let turn = 0; turn < 12; turn++) {
          // A turn: an added token, text, an added token, as templates write them.
          render += added[Math.floor(random() * added.length)]! +
            text(random, 12) +
            (random() < 0.5
              ? added[Math.floor(random() * added.length)]!
              : "") +
            (random() < 0.3 ? "\n" : "");
          deepStrictEqual(
            segments.encode(render),
            tokenizer.encode(render, { addSpecialTokens: false }),
            `${model.family}, conversation ${conversation}, turn ${turn}`,
          );
        }
      }
    });
  }
  // The families the local backend counts incrementally are covered.
  ok(safe.includes("qwen3"), safe.join(", "));
  ok(safe.length >= 2, safe.join(", "));
});

Deno.test("SegmentIds.encode() encodes only the segments it has not seen", () => {
  const encoded: string[] = [];
  const tokenizer = {
    addedTokens: ["<|im_end|>", "<|im_start|>"],
    encode(segment: string) {
      encoded.push(segment);
      return [...segment].map((c) => c.codePointAt(0)!);
    },
  };
  const segments = new SegmentIds(tokenizer);
  const first = "<|im_start|>user\nhello<|im_end|>\n";
  segments.encode(first);
  encoded.length = 0;
  const grown = `${first}<|im_start|>assistant\nhi there<|im_end|>\n`;
  const ids = segments.encode(grown);
  deepStrictEqual(encoded, ["assistant\nhi there"]);
  deepStrictEqual(ids, [...grown].map((c) => c.codePointAt(0)!));
});
