/**
 * Exact tokenization from a model's `tokenizer.json`, with the pure-JS
 * `@huggingface/tokenizers`, which gives the same ids as the Rust
 * `tokenizers` crate that vLLM uses (see `tests/tokenizer_oracle_test.ts`).
 *
 * @module
 */
import { Tokenizer } from "@huggingface/tokenizers";
import { specialTokensOf } from "./_tokenizer_config.ts";

export { readModelFolder } from "./_tokenizer_files.ts";
export type { ModelFolder } from "./_tokenizer_files.ts";

/** The text of a model's tokenizer files. */
export interface TokenizerFiles {
  /** The text of `tokenizer.json`. */
  readonly tokenizerJson: string;
  /**
   * The text of `tokenizer_config.json`: special tokens and clean-up flags.
   *
   * @default {"{}"}
   */
  readonly tokenizerConfig?: string;
}

/** Options of {@linkcode LocalTokenizer.count} and {@linkcode LocalTokenizer.encode}. */
export interface EncodeOptions {
  /**
   * Whether the post-processor adds the model's special tokens (BOS, ...).
   * Chat prompts use `false`: the template writes them itself.
   *
   * @default {true}
   */
  readonly addSpecialTokens?: boolean;
}

/** A loaded tokenizer. */
export interface LocalTokenizer {
  /**
   * Tokenizes a text.
   *
   * @param text The text.
   * @param options Encode options.
   * @returns The token ids.
   */
  encode(text: string, options?: EncodeOptions): number[];
  /**
   * Counts the tokens of a text.
   *
   * @param text The text.
   * @param options Encode options.
   * @returns The number of tokens.
   */
  count(text: string, options?: EncodeOptions): number;
  /**
   * Decodes ids to text, special tokens kept, as `tokenizer.decode(ids)`.
   *
   * @param ids The token ids.
   * @returns The text.
   */
  decode(ids: readonly number[]): string;
  /**
   * The vocabulary's string of each id, as `convert_ids_to_tokens(ids)`.
   *
   * @param ids The token ids.
   * @returns One string per id.
   */
  tokenStrings(ids: readonly number[]): string[];
  /**
   * Whether an id is in the vocabulary, added tokens included.
   *
   * @param id A candidate id.
   * @returns `true` for a known id.
   */
  isTokenId(id: number): boolean;
  /** The contents of the added tokens, longest first, as they split text. */
  readonly addedTokens: readonly string[];
  /**
   * The special-token variables templates receive (`bos_token`,
   * `eos_token`, `unk_token`, `pad_token`, ...), as strings.
   */
  readonly specialTokens: Readonly<Record<string, string>>;
}

/**
 * Loads a tokenizer from the text of its files.
 *
 * @example Count tokens
 * ```ts
 * import { loadTokenizer } from "./_tokenizer.ts";
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
  const json: unknown = JSON.parse(files.tokenizerJson);
  const config: unknown = JSON.parse(files.tokenizerConfig ?? "{}");
  if (!isObject(json) || !isObject(config)) {
    throw new TypeError(
      "Cannot load the tokenizer as 'tokenizer.json' and 'tokenizer_config.json' must hold JSON objects",
    );
  }
  const tokenizer = new Tokenizer(json, config);
  const addedTokens = [...tokenizer.get_added_tokens_decoder().values()]
    .map((token) => token.content)
    .sort((a, b) => b.length - a.length);
  const specialTokens = Object.freeze(specialTokensOf(config));
  function encode(text: string, options?: EncodeOptions): number[] {
    return tokenizer.encode(text, {
      add_special_tokens: options?.addSpecialTokens ?? true,
    }).ids;
  }
  return {
    encode,
    count: (text, options) => encode(text, options).length,
    decode: (ids) => tokenizer.decode([...ids], { skip_special_tokens: false }),
    tokenStrings: (ids) => ids.map((id) => tokenizer.id_to_token(id) ?? ""),
    isTokenId: (id) =>
      Number.isSafeInteger(id) && id >= 0 &&
      tokenizer.id_to_token(id) !== undefined,
    addedTokens: Object.freeze(addedTokens),
    specialTokens,
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
