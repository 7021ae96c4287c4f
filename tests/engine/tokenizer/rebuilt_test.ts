import { ok, rejects, strictEqual, throws } from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { LocalBackend } from "../../../src/backends/local/mod.ts";
import { CountError } from "../../../src/core/errors.ts";
import { EngineError } from "../../../packages/engine/src/common/errors.ts";
import {
  checkTransformersRebuild,
  rebuildingTokenizerClass,
} from "../../../packages/engine/src/tokenizer/rebuilt.ts";

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

/** Qwen3's tokenizer.json pipeline, as Qwen2Tokenizer also rebuilds it. */
const QWEN = {
  normalizer: { type: "NFC" },
  pre_tokenizer: {
    type: "Sequence",
    pretokenizers: [
      {
        type: "Split",
        pattern: {
          Regex:
            "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
        },
        behavior: "Isolated",
        invert: false,
      },
      {
        type: "ByteLevel",
        add_prefix_space: false,
        trim_offsets: false,
        use_regex: false,
      },
    ],
  },
  model: {
    type: "BPE",
    dropout: null,
    unk_token: null,
    continuing_subword_prefix: "",
    end_of_word_suffix: "",
    fuse_unk: false,
    byte_fallback: false,
    ignore_merges: false,
  },
};
const files = (
  tokenizerClass: string,
  modelType?: string,
  json: unknown = QWEN,
) => ({
  tokenizerJson: json,
  tokenizerConfig: JSON.stringify({ tokenizer_class: tokenizerClass }),
  modelConfig: modelType === undefined
    ? undefined
    : JSON.stringify({ model_type: modelType }),
});

Deno.test("rebuildingTokenizerClass() picks the class AutoTokenizer loads in transformers 5.18", async (t) => {
  await t.step("the hub class, when the model type registers no other", () => {
    strictEqual(
      rebuildingTokenizerClass(files("LlamaTokenizerFast", "llama")),
      "LlamaTokenizer",
    );
    strictEqual(
      rebuildingTokenizerClass(files("GPT2Tokenizer", "gpt2")),
      "GPT2Tokenizer",
    );
    strictEqual(
      rebuildingTokenizerClass(files("Qwen2Tokenizer")),
      "Qwen2Tokenizer",
    );
  });
  await t.step(
    "the registered class, for a model type whose hub class is known wrong",
    () => {
      strictEqual(
        rebuildingTokenizerClass(files("PreTrainedTokenizerFast", "qwen2")),
        "Qwen2Tokenizer",
      );
      strictEqual(
        rebuildingTokenizerClass(files("LlamaTokenizerFast", "qwen2")),
        "Qwen2Tokenizer",
      );
    },
  );
  await t.step("none, where tokenizer.json is kept as written", () => {
    for (
      const kept of [
        files("PreTrainedTokenizerFast", "llama"),
        files("LlamaTokenizerFast", "deepseek_v3"),
        files("LlamaTokenizer", "mistral"),
        files("TokenizersBackend", "qwen3"),
        files("SomeUnknownTokenizer", "llama"),
      ]
    ) {
      strictEqual(
        rebuildingTokenizerClass(kept),
        undefined,
        kept.tokenizerConfig,
      );
    }
  });
});

Deno.test("checkTransformersRebuild() refuses what transformers 5.18 would tokenize otherwise", async (t) => {
  await t.step("a class whose rebuild differs from tokenizer.json", () => {
    for (
      const [name, folder] of [
        ["LlamaTokenizer", files("LlamaTokenizerFast", "llama")],
        ["GPT2Tokenizer", files("GPT2Tokenizer", "gpt2")],
        [
          "Qwen2Tokenizer",
          files("Qwen2Tokenizer", "qwen2", {
            ...QWEN,
            model: { ...QWEN.model, ignore_merges: true },
          }),
        ],
        [
          "Qwen2Tokenizer",
          files(
            "PreTrainedTokenizerFast",
            "qwen2",
            { ...QWEN, normalizer: null },
          ),
        ],
        ["BertTokenizer", files("BertTokenizer", "llama")],
      ] as const
    ) {
      throws(
        () => checkTransformersRebuild(folder),
        (error: unknown) => {
          ok(error instanceof EngineError);
          ok(error.message.includes(name), error.message);
          ok(error.message.includes("5.18.0"), error.message);
          ok(error.message.includes("vllm backend"), error.message);
          return true;
        },
      );
    }
  });
  await t.step(
    "a folder whose tokenizer.json holds what its class rebuilds",
    () => {
      checkTransformersRebuild(files("Qwen2Tokenizer", "qwen3"));
      checkTransformersRebuild(files("PreTrainedTokenizerFast", "qwen2"));
    },
  );
  await t.step("a kept class", () => {
    checkTransformersRebuild(
      files("LlamaTokenizerFast", "deepseek_v3", BYTE_LEVEL),
    );
    checkTransformersRebuild(
      files("PreTrainedTokenizerFast", "llama", METASPACE),
    );
  });
});

Deno.test("LocalBackend.load() refuses a folder transformers 5 rebuilds, and every count fails", async () => {
  await using backend = new LocalBackend({ dir: DIR, cache: null });
  await rejects(backend.load(), /LlamaTokenizer/);
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
