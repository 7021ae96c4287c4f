/**
 * Exact tokenization from a model's `tokenizer.json`: the ids of the Rust
 * `tokenizers` crate that vLLM uses (see
 * `tests/conformance/tokenizer_oracle_test.ts`). The engine runs the
 * crate's pipeline itself for the shapes it reproduces (pipeline.ts: BPE
 * models, Qwen, Llama 3, Gemma 3 and DeepSeek V3 among them); any other
 * shape goes through @huggingface/tokenizers' public `Tokenizer`
 * (library_tokenizer.ts), which also decodes. A folder without
 * tokenizer.json whose tokenizer class is Kimi K2's remote code counts with
 * that class's tiktoken vocabulary (kimi.ts); in vLLM's tokenizer mode
 * `grok2`, `tokenizer.tok.json` counts with Grok 2's (grok2.ts).
 *
 * @module
 */
import { Tokenizer } from "@huggingface/tokenizers";
import { EngineError } from "../common/errors.ts";
import { specialTokensOf } from "./config.ts";
import { libraryEncoder } from "./library_tokenizer.ts";
import type { EncodeOptions, LocalTokenizer } from "./local_tokenizer.ts";
import { buildPipeline, type Pipeline } from "./pipeline.ts";

export { readModelFolder } from "./files.ts";
export type { ModelFolder, ReadFolderOptions } from "./files.ts";
export { GROK2_CHAT, grok2Tokenizer } from "./grok2.ts";
export { kimiTokenizer } from "./kimi.ts";
export type { EncodeOptions, LocalTokenizer } from "./local_tokenizer.ts";

/** The text of a model's tokenizer files. */
export interface TokenizerFiles {
  /** The text of `tokenizer.json`, or its already parsed content (not copied: do not reuse it). */
  readonly tokenizerJson: unknown;
  /**
   * The text of `tokenizer_config.json`: special tokens and clean-up flags.
   *
   * @default {"{}"}
   */
  readonly tokenizerConfig?: string;
}

/**
 * Loads a tokenizer from the text of its files.
 *
 * @example Count tokens
 * ```ts
 * import { loadTokenizer } from "./tokenizer.ts";
 * const tokenizerJson = JSON.stringify({
 *   model: { type: "WordLevel", vocab: { "[UNK]": 0, hi: 1 }, unk_token: "[UNK]" },
 *   pre_tokenizer: { type: "Whitespace" },
 *   normalizer: null,
 *   post_processor: null,
 *   decoder: null,
 *   added_tokens: [],
 * });
 * const tokenizer = loadTokenizer({ tokenizerJson });
 * console.assert(tokenizer.count("hi there") === 2);
 * ```
 *
 * @param files The text of `tokenizer.json` and `tokenizer_config.json`.
 * @returns The tokenizer.
 * @throws {SyntaxError} If a file is not JSON.
 * @throws {TypeError} If `tokenizer.json` is not an object.
 */
export function loadTokenizer(files: TokenizerFiles): LocalTokenizer {
  const json: unknown = typeof files.tokenizerJson === "string"
    ? JSON.parse(files.tokenizerJson)
    : files.tokenizerJson;
  const config: unknown = JSON.parse(files.tokenizerConfig ?? "{}");
  if (!isObject(json) || !isObject(config)) {
    throw new TypeError(
      "Cannot load the tokenizer as 'tokenizer.json' and 'tokenizer_config.json' must hold JSON objects",
    );
  }
  const specialTokens = Object.freeze(specialTokensOf(config));
  const pipeline = buildPipeline(json);
  return pipeline === undefined
    ? libraryTokenizer(json, config, specialTokens)
    : pipelineTokenizer(pipeline, json, config, specialTokens);
}

/** The engine's pipeline encodes; the library decodes, built on the first call. */
function pipelineTokenizer(
  pipeline: Pipeline,
  json: Record<string, unknown>,
  config: Record<string, unknown>,
  specialTokens: Readonly<Record<string, string>>,
): LocalTokenizer {
  const encode = (text: string, options?: EncodeOptions): number[] =>
    pipeline.encode(
      text,
      options?.addSpecialTokens ?? true,
      options?.splitAddedTokens ?? true,
    );
  // Each id's string: an added token's content over the vocabulary's.
  const stringOf = (id: number): string | undefined =>
    pipeline.added.get(id) ??
      (Object.hasOwn(pipeline.strings, id) ? pipeline.strings[id] : undefined);
  const decoderOf = decoderFactory(pipeline, json, config);
  let decoder: Tokenizer | undefined;
  return {
    encode,
    count: (text, options) => encode(text, options).length,
    decode: (ids) =>
      (decoder ??= decoderOf()).decode([...ids], {
        skip_special_tokens: false,
      }),
    tokenStrings: (ids) => ids.map((id) => stringOf(id) ?? ""),
    isTokenId: (id) => Number.isSafeInteger(id) && stringOf(id) !== undefined,
    addedTokens: Object.freeze(longestFirst(pipeline.added.values())),
    specialTokens,
  };
}

/**
 * The library's tokenizer for decoding only: the decoder, the vocabulary
 * and the added tokens of tokenizer.json, without the merges (decoding
 * reads none), so that it builds in a fraction of the full load and the
 * parsed file need not be kept.
 */
function decoderFactory(
  pipeline: Pipeline,
  json: Record<string, unknown>,
  config: Record<string, unknown>,
): () => Tokenizer {
  const { vocab: _vocab, merges, ...options } = isObject(json.model)
    ? json.model
    : {};
  const { decoder, added_tokens } = json;
  return () =>
    new Tokenizer({
      model: {
        ...options,
        vocab: Object.fromEntries(pipeline.vocab),
        ...(merges === undefined ? {} : { merges: [] }),
      },
      normalizer: null,
      pre_tokenizer: null,
      post_processor: null,
      decoder,
      added_tokens,
    }, config);
}

/** The library's public `Tokenizer` encodes and decodes. */
function libraryTokenizer(
  json: Record<string, unknown>,
  config: Record<string, unknown>,
  specialTokens: Readonly<Record<string, string>>,
): LocalTokenizer {
  const library = libraryEncoder(json, config);
  const { tokenizer } = library;
  const added = [...tokenizer.get_added_tokens_decoder().values()];
  const addedTokens = Object.freeze(longestFirst(added.map((t) => t.content)));
  const encode = (text: string, options?: EncodeOptions): number[] => {
    if (
      options?.splitAddedTokens === false &&
      addedTokens.some((token) => text.includes(token))
    ) {
      throw new EngineError(
        "Cannot encode an added token's text as ordinary text with this tokenizer.json",
      );
    }
    return library.encode(text, options?.addSpecialTokens ?? true);
  };
  return {
    encode,
    count: (text, options) => encode(text, options).length,
    decode: (ids) => tokenizer.decode([...ids], { skip_special_tokens: false }),
    tokenStrings: (ids) => ids.map((id) => tokenizer.id_to_token(id) ?? ""),
    isTokenId: (id) =>
      Number.isSafeInteger(id) && id >= 0 &&
      tokenizer.id_to_token(id) !== undefined,
    addedTokens,
    specialTokens,
  };
}

/** The added tokens' contents, longest first, as they split text. */
function longestFirst(contents: Iterable<string>): string[] {
  return [...contents].sort((a, b) => b.length - a.length);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
