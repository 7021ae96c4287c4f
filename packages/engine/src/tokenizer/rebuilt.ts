/**
 * The tokenizer class rule of transformers 5.18.0, which vLLM loads
 * tokenizers with. `AutoTokenizer.from_pretrained` (models/auto/
 * tokenization_auto.py) picks a class from `tokenizer_config.json`'s
 * `tokenizer_class`, `config.json`'s model type and the classes registered
 * to it; `TokenizersBackend.convert_to_native_format`
 * (tokenization_utils_tokenizers.py) keeps `tokenizer.json` as written only
 * for a class without an `__init__` of its own. Any other class rebuilds
 * the normalizer, pre-tokenizer and model from the vocabulary and merges
 * (GPT-2: ByteLevel; Qwen2: NFC, Split, ByteLevel; Llama: Metaspace), so a
 * relabelled fine-tune is counted by vLLM otherwise than its file says.
 * Such a folder counts as written only when the file already holds what the
 * class rebuilds; otherwise it is refused.
 *
 * @module
 */
import { EngineError } from "../common/errors.ts";
import {
  INCORRECT_HUB_CLASS,
  REBUILDING,
  REGISTERED,
  TRANSFORMERS_RELEASE,
} from "./transformers_classes.ts";

type Json = Record<string, unknown>;

/** The classes `AutoTokenizer` replaces with `TokenizersBackend`. */
const GENERIC = new Set([
  "TokenizersBackend",
  "PythonBackend",
  "PreTrainedTokenizer",
  "MistralCommonBackend",
  "BloomTokenizer",
]);

/** Qwen2Tokenizer's PRETOKENIZE_REGEX. */
const QWEN2_SPLIT =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/** The BPE settings a byte-level class's `__init__` sets. */
const BYTE_LEVEL_BPE = {
  unk_token: null,
  fuse_unk: false,
  byte_fallback: false,
};

/**
 * What each mirrored class's `__init__` builds (normalizer, pre-tokenizer
 * and BPE settings), from the `tokenizer_config.json` keys it reads.
 */
const REBUILDS: Record<string, (config: Json) => Json> = {
  GPT2Tokenizer: (config) => ({
    normalizer: null,
    pre_tokenizer: byteLevel(config.add_prefix_space === true, true),
    model: BYTE_LEVEL_BPE,
  }),
  Qwen2Tokenizer: (config) => ({
    normalizer: { type: "NFC" },
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [
        split({ Regex: QWEN2_SPLIT }, "Isolated"),
        byteLevel(config.add_prefix_space === true, false),
      ],
    },
    model: BYTE_LEVEL_BPE,
  }),
  LlamaTokenizer: (config) => ({
    normalizer: null,
    pre_tokenizer: {
      type: "Metaspace",
      replacement: "\u2581",
      // _get_prepend_scheme(add_prefix_space, self), legacy defaulting to False.
      prepend_scheme: config.add_prefix_space === false
        ? "never"
        : config.legacy === true
        ? "always"
        : "first",
      split: false,
    },
    model: { unk_token: null, fuse_unk: true, byte_fallback: true },
  }),
  GemmaTokenizer: (config) => ({
    normalizer: {
      type: "Replace",
      pattern: { String: " " },
      content: "\u2581",
    },
    pre_tokenizer: split({ String: " " }, "MergedWithPrevious"),
    model: {
      unk_token: tokenText(config.unk_token) ?? "<unk>",
      fuse_unk: true,
      byte_fallback: true,
    },
  }),
};

/** The files the rule reads. */
export interface RebuildCheckFiles {
  /** The parsed `tokenizer.json`. */
  readonly tokenizerJson: unknown;
  /** The text of `tokenizer_config.json`, if any. */
  readonly tokenizerConfig?: string | undefined;
  /** The text of `config.json`, if any. */
  readonly modelConfig?: string | undefined;
}

/**
 * The class transformers' `AutoTokenizer.from_pretrained` loads a folder
 * with, when that class rebuilds `tokenizer.json` (one with its own
 * `__init__`); `undefined` when the file is kept as written.
 *
 * @param files The folder's configuration files.
 * @returns The rebuilding class's name, without `Fast`, or `undefined`.
 */
export function rebuildingTokenizerClass(
  files: Omit<RebuildCheckFiles, "tokenizerJson">,
): string | undefined {
  const config = parseObject(files.tokenizerConfig ?? "{}");
  const model = parseObject(files.modelConfig ?? "{}");
  const configClass = stringOr(config.tokenizer_class);
  const hub = configClass ?? stringOr(model.tokenizer_class);
  const type = stringOr(model.model_type) ?? "";
  const registered = tables().registered.get(type);
  // A remote-code folder skips the comparison; vLLM without
  // --trust-remote-code then loads the named class.
  const autoMap = config.auto_map;
  const remote = Array.isArray(autoMap) ||
    isObject(autoMap) && (autoMap.AutoTokenizer ?? null) !== null;
  if (
    !remote && hub !== undefined &&
    registered !== undefined && registered !== stripFast(hub)
  ) {
    if (GENERIC.has(registered)) return undefined;
    const incorrect = tables().incorrect;
    return found(
      incorrect.has(type) || incorrect.has(stringOr(model.model_name) ?? "")
        ? registered
        : hub,
    );
  }
  if (hub !== undefined) return found(hub);
  return registered === undefined ? undefined : found(registered);
}

/**
 * Throws when transformers 5.18.0 (as vLLM loads the folder) would not
 * tokenize as `tokenizer.json` says: its class rebuilds the tokenizer, and
 * the file differs from the rebuild in the normalizer, the pre-tokenizer or
 * the BPE settings, or the class is one the engine does not mirror.
 *
 * @param files The folder's files.
 * @throws {EngineError} Naming the class, for such a folder.
 */
export function checkTransformersRebuild(files: RebuildCheckFiles): void {
  const name = rebuildingTokenizerClass(files);
  if (name === undefined) return;
  const rebuild = REBUILDS[name]?.(parseObject(files.tokenizerConfig ?? "{}"));
  if (rebuild !== undefined && keepsRebuild(files.tokenizerJson, rebuild)) {
    return;
  }
  throw new EngineError(
    `Cannot count locally: transformers ${TRANSFORMERS_RELEASE}, as vLLM loads this folder, tokenizes with ${name}, which rebuilds tokenizer.json's ${
      rebuild === undefined
        ? "pipeline"
        : "normalizer, pre-tokenizer or model differently from the file"
    }; use the vllm backend`,
  );
}

/** Whether the file already holds what the class rebuilds. */
function keepsRebuild(tokenizerJson: unknown, rebuild: Json): boolean {
  if (!isObject(tokenizerJson) || !isObject(tokenizerJson.model)) return false;
  const model = tokenizerJson.model;
  if (model.type !== "BPE" || (model.dropout ?? null) !== null) return false;
  const settings = rebuild.model as Json;
  // An empty affix is no affix; `ignore_merges` is false in every rebuild.
  return model.ignore_merges !== true &&
    (model.unk_token ?? null) === settings.unk_token &&
    (model.fuse_unk ?? false) === settings.fuse_unk &&
    (model.byte_fallback ?? false) === settings.byte_fallback &&
    !model.continuing_subword_prefix && !model.end_of_word_suffix &&
    canonical(tokenizerJson.normalizer) === canonical(rebuild.normalizer) &&
    canonical(tokenizerJson.pre_tokenizer) === canonical(rebuild.pre_tokenizer);
}

function byteLevel(addPrefixSpace: boolean, useRegex: boolean): Json {
  return {
    type: "ByteLevel",
    add_prefix_space: addPrefixSpace,
    use_regex: useRegex,
  };
}

function split(pattern: Json, behavior: string): Json {
  return { type: "Split", pattern, behavior, invert: false };
}

/** Key-sorted JSON, without ByteLevel's `trim_offsets` (offsets only). */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (!isObject(value)) return JSON.stringify(value ?? null);
  return `{${
    Object.keys(value).filter((key) => key !== "trim_offsets").sort()
      .map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`)
      .join(",")
  }}`;
}

/** `tokenizer_class_from_name`: a rebuilding class, or `undefined`. */
function found(name: string): string | undefined {
  const bare = stripFast(name);
  return tables().rebuilding.has(bare) ? bare : undefined;
}

let parsed:
  | {
    registered: Map<string, string>;
    incorrect: Set<string>;
    rebuilding: Set<string>;
  }
  | undefined;

function tables(): NonNullable<typeof parsed> {
  if (parsed !== undefined) return parsed;
  const registered = new Map<string, string>();
  for (const entry of REGISTERED.split(" ")) {
    const [name, types = ""] = entry.split(":");
    for (const type of types.split(",")) registered.set(type, name!);
  }
  parsed = {
    registered,
    incorrect: new Set(INCORRECT_HUB_CLASS.split(" ")),
    rebuilding: new Set(REBUILDING.split(" ")),
  };
  return parsed;
}

function stripFast(name: string): string {
  return name.endsWith("Fast") ? name.slice(0, -4) : name;
}

function tokenText(value: unknown): string | undefined {
  return isObject(value) ? stringOr(value.content) : stringOr(value);
}

function stringOr(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function parseObject(text: string): Json {
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : {};
  } catch {
    return {};
  }
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
