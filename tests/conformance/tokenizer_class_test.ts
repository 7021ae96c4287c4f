// Relabels the Qwen3, Llama 3, Gemma 3 and DeepSeek V3 tokenizer files with
// other tokenizer classes and model types, and compares the engine with
// transformers' AutoTokenizer.from_pretrained(dir) on each folder: the class
// it loads must rebuild exactly when the engine says so, and every text of a
// folder the engine counts must get transformers' ids. Needs a Python with
// transformers in tools/.oracle/py (see ./_oracles.ts).
// Covers: packages/engine/src/tokenizer/rebuilt.ts, transformers_classes.ts
import { deepStrictEqual, ok } from "node:assert/strict";
import { join } from "node:path";
import { EngineError } from "../../packages/engine/src/common/errors.ts";
import {
  checkTransformersRebuild,
  rebuildingTokenizerClass,
} from "../../packages/engine/src/tokenizer/rebuilt.ts";
import { loadTokenizer } from "../../packages/engine/src/tokenizer/tokenizer.ts";
import { MODEL_FILES } from "../_kit/model_files.ts";
import { runTransformersPython } from "./_oracles.ts";

/** Loads each folder as vLLM does and encodes the texts without special tokens. */
const ORACLE = `
import json, sys
from transformers import AutoTokenizer, TokenizersBackend
out = []
for job in json.load(sys.stdin):
    try:
        t = AutoTokenizer.from_pretrained(job["dir"])
        cls = type(t)
        kept = cls is TokenizersBackend or "__init__" not in cls.__dict__
        out.append({"cls": cls.__name__, "kept": kept,
                    "ids": [t.encode(x, add_special_tokens=False) for x in job["texts"]]})
    except Exception as e:
        out.append({"error": type(e).__name__})
print(json.dumps(out))
`;

const TEXTS = [
  "Hello world, it's 2025!",
  "  leading spaces and\n\nnew lines\t tabs",
  "naïve café — ünïcödé 日本語のテキスト 12345",
  "x=1; if (x) { return f(x) } // done",
  " one more",
];

/** Relabels: tokenizer_class and config.json's model_type (null: no config.json). */
const LABELS: [string | undefined, string | null][] = [
  [undefined, "original"],
  ["GPT2Tokenizer", "gpt2"],
  ["Qwen2Tokenizer", "qwen2"],
  ["LlamaTokenizerFast", "llama"],
  ["PreTrainedTokenizerFast", "qwen2"],
  ["LlamaTokenizer", "mistral"],
  ["LlamaTokenizerFast", "deepseek_v3"],
  ["BertTokenizer", "llama"],
  ["Qwen2Tokenizer", null],
];
const ORIGINAL_TYPES: Record<string, string> = {
  qwen3: "qwen3",
  llama3: "llama",
  gemma3: "gemma3_text",
  deepseek_v3: "deepseek_v3",
};

interface Folder {
  readonly name: string;
  readonly dir: string;
  readonly tokenizerJson: string;
  readonly tokenizerConfig: string;
  readonly modelConfig: string | undefined;
}

async function folders(root: string): Promise<Folder[]> {
  const made: Folder[] = [];
  for (const files of MODEL_FILES) {
    const tokenizerJson = await Deno.readTextFile(files.tokenizerPath);
    for (const [label, type] of LABELS) {
      const config = { ...files.config };
      if (label !== undefined) config.tokenizer_class = label;
      const modelType = type === "original"
        ? ORIGINAL_TYPES[files.family]
        : type;
      const name = `${files.family}-${config.tokenizer_class}-${modelType}`;
      if (made.some((folder) => folder.name === name)) continue;
      const dir = join(root, name);
      await Deno.mkdir(dir);
      const tokenizerConfig = JSON.stringify(config);
      const modelConfig = modelType === null
        ? undefined
        : JSON.stringify({ model_type: modelType });
      await Deno.writeTextFile(join(dir, "tokenizer.json"), tokenizerJson);
      await Deno.writeTextFile(
        join(dir, "tokenizer_config.json"),
        tokenizerConfig,
      );
      if (modelConfig !== undefined) {
        await Deno.writeTextFile(join(dir, "config.json"), modelConfig);
      }
      made.push({ name, dir, tokenizerJson, tokenizerConfig, modelConfig });
    }
  }
  return made;
}

interface OracleResult {
  readonly cls?: string;
  readonly kept?: boolean;
  readonly ids?: number[][];
  readonly error?: string;
}

async function oracle(jobs: unknown[]): Promise<OracleResult[]> {
  return await runTransformersPython(["-c", ORACLE], jobs) as OracleResult[];
}

Deno.test("checkTransformersRebuild() counts a relabelled folder as transformers 5.18 does, or refuses it", async () => {
  const root = await Deno.makeTempDir({ prefix: "tokenizer-class-" });
  try {
    const made = await folders(root);
    const results = await oracle(
      made.map(({ dir }) => ({ dir, texts: TEXTS })),
    );
    let counted = 0, refused = 0, agreeing = 0;
    for (const [index, folder] of made.entries()) {
      const result = results[index]!;
      // The class decision: the engine names a rebuilding class exactly when
      // transformers' loaded class does not keep tokenizer.json (a class
      // that cannot load the vocabulary at all rebuilds too).
      const named = rebuildingTokenizerClass(folder);
      deepStrictEqual(
        named === undefined ? "kept" : "rebuilt",
        result.kept ? "kept" : "rebuilt",
        folder.name,
      );
      if (result.cls !== undefined && !result.kept) {
        deepStrictEqual(named, result.cls, folder.name);
      }
      let refusal: unknown;
      try {
        checkTransformersRebuild({
          ...folder,
          tokenizerJson: JSON.parse(folder.tokenizerJson),
        });
      } catch (error) {
        refusal = error;
      }
      if (refusal !== undefined) {
        ok(refusal instanceof EngineError, folder.name);
        ok(!result.kept, `${folder.name}: refused a folder transformers keeps`);
        refused++;
        continue;
      }
      ok(
        result.ids !== undefined,
        `${folder.name}: transformers raised ${result.error}`,
      );
      counted++;
      const tokenizer = loadTokenizer({
        tokenizerJson: folder.tokenizerJson,
        tokenizerConfig: folder.tokenizerConfig,
      });
      for (const [i, text] of TEXTS.entries()) {
        deepStrictEqual(
          tokenizer.encode(text, { addSpecialTokens: false }),
          result.ids[i],
          `${folder.name}: ${JSON.stringify(text)}`,
        );
        agreeing++;
      }
    }
    console.log(
      `${made.length} folders: ${counted} counted (${agreeing}/${
        counted * TEXTS.length
      } texts equal to transformers), ${refused} refused (all rebuilt by transformers)`,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
