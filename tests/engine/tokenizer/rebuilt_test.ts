import { ok, rejects, strictEqual, throws } from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { LocalBackend } from "../../../src/backends/local/mod.ts";
import { CountError } from "../../../src/core/errors.ts";
import { EngineError } from "../../../packages/engine/src/common/errors.ts";
import { checkTransformersRebuild } from "../../../packages/engine/src/tokenizer/rebuilt.ts";

const DIR = fileURLToPath(
  new URL("../../fixtures/llama_byte_level/", import.meta.url),
);
const BYTE_LEVEL = {
  pre_tokenizer: {
    type: "Sequence",
    pretokenizers: [{ type: "Split" }, { type: "ByteLevel" }],
  },
};
const METASPACE = { pre_tokenizer: { type: "Metaspace" } };
const llamaClass = JSON.stringify({ tokenizer_class: "LlamaTokenizerFast" });

Deno.test("checkTransformersRebuild() refuses what transformers 5 would tokenize otherwise", async (t) => {
  await t.step("a Llama-typed folder with a byte-level tokenizer.json", () => {
    throws(
      () =>
        checkTransformersRebuild({
          tokenizerJson: BYTE_LEVEL,
          tokenizerConfig: llamaClass,
          modelConfig: '{"model_type": "llama"}',
        }),
      (error: unknown) => {
        ok(error instanceof EngineError);
        ok(error.message.includes('"llama"'), error.message);
        ok(error.message.includes("Metaspace"), error.message);
        return true;
      },
    );
  });
  await t.step("what transformers 5 keeps as tokenizer.json says", () => {
    const kept = [
      // A model type whose hub class transformers overrides.
      { modelConfig: '{"model_type": "deepseek_v3"}' },
      // A SentencePiece-style tokenizer.json: the rebuild changes nothing.
      { tokenizerJson: METASPACE },
      // Another class.
      { tokenizerConfig: '{"tokenizer_class": "PreTrainedTokenizerFast"}' },
      // Tokenizer files without the model's config.json.
      { modelConfig: undefined },
    ];
    for (const change of kept) {
      checkTransformersRebuild({
        tokenizerJson: BYTE_LEVEL,
        tokenizerConfig: llamaClass,
        modelConfig: '{"model_type": "llama"}',
        ...change,
      });
    }
  });
});

Deno.test("LocalBackend.load() refuses a folder transformers 5 rebuilds, and every count fails", async () => {
  await using backend = new LocalBackend({ dir: DIR, cache: null });
  await rejects(backend.load(), /transformers 5/);
  const request = { messages: [{ role: "user", content: "hi" }] };
  await rejects(backend.count(request, { contextLength: 4096 }), CountError);
  strictEqual(
    (await backend.count({ prompt: "x" }, {
      contextLength: 4096,
      kind: "completion",
    }).catch((error: unknown) => error)) instanceof CountError,
    true,
  );
});
