/**
 * Model folders that transformers 5 does not tokenize as their
 * `tokenizer.json` says. vLLM loads a tokenizer with transformers'
 * AutoTokenizer; in transformers 5 the `LlamaTokenizer` class installs its
 * own Metaspace pre-tokenizer over whatever `tokenizer.json` declares
 * (huggingface/transformers#45488). A byte-level `tokenizer.json` under that
 * class (a Llama-typed distilled model, say) is then counted by vLLM with
 * the rebuilt pre-tokenizer: such a folder is refused rather than counted
 * differently.
 *
 * @module
 */
import { EngineError } from "../common/errors.ts";

/** The tokenizer classes transformers 5 rebuilds with a Metaspace pre-tokenizer. */
const REBUILT_CLASSES = new Set(["LlamaTokenizer", "LlamaTokenizerFast"]);

/**
 * Model types whose hub `tokenizer_class` transformers 5 overrides with its
 * generic backend, which keeps `tokenizer.json` as written (its
 * MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS). A type missing here is refused,
 * never miscounted.
 */
const KEPT_MODEL_TYPES = new Set([
  "arctic",
  "chameleon",
  "deepseek_v2",
  "deepseek_v3",
  "deepseek_vl",
  "deepseek_vl_hybrid",
  "deepseek_vl_v2",
  "fuyu",
  "hyperclovax_vlm",
  "internlm2",
  "jamba",
  "janus",
  "llava",
  "llava_next",
  "modernbert",
  "opencua",
  "phi3",
]);

/** The files the check reads. */
export interface RebuildCheckFiles {
  /** The parsed `tokenizer.json`. */
  readonly tokenizerJson: unknown;
  /** The text of `tokenizer_config.json`, if any. */
  readonly tokenizerConfig?: string | undefined;
  /** The text of `config.json`, if any. */
  readonly modelConfig?: string | undefined;
}

/**
 * Throws when transformers 5 would rebuild the folder's pre-tokenizer: a
 * `config.json` whose model type keeps the hub class, a `tokenizer_class` of
 * `LlamaTokenizer(Fast)`, and a byte-level `tokenizer.json`. A folder without
 * `config.json` (tokenizer files only) is taken as `tokenizer.json` says.
 *
 * @param files The folder's files.
 * @throws {EngineError} Naming the model type and class, for such a folder.
 */
export function checkTransformersRebuild(files: RebuildCheckFiles): void {
  if (files.modelConfig === undefined) return;
  const model = parseObject(files.modelConfig);
  const config = parseObject(files.tokenizerConfig ?? "{}");
  const modelType = typeof model.model_type === "string"
    ? model.model_type
    : "";
  const tokenizerClass = config.tokenizer_class;
  if (
    typeof tokenizerClass !== "string" ||
    !REBUILT_CLASSES.has(tokenizerClass) || KEPT_MODEL_TYPES.has(modelType) ||
    !isObject(files.tokenizerJson) ||
    !usesByteLevel(files.tokenizerJson.pre_tokenizer)
  ) return;
  throw new EngineError(
    `Cannot count with this model folder: its tokenizer.json is byte-level, but config.json's model type ${
      JSON.stringify(modelType)
    } with tokenizer_class ${tokenizerClass} makes transformers 5 (as vLLM loads it) replace that pre-tokenizer with Metaspace (huggingface/transformers#45488), so vLLM counts differently`,
  );
}

function usesByteLevel(node: unknown, depth = 0): boolean {
  if (depth > 8 || !isObject(node)) return false;
  if (node.type === "ByteLevel") return true;
  const members = node.pretokenizers;
  return Array.isArray(members) &&
    members.some((member) => usesByteLevel(member, depth + 1));
}

function parseObject(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : {};
  } catch {
    return {};
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
