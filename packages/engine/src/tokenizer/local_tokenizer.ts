/**
 * What every tokenizer the engine loads offers: from tokenizer.json
 * (tokenizer.ts) or from a tiktoken vocabulary (tiktoken_tokenizer.ts).
 *
 * @module
 */

/** Options of {@linkcode LocalTokenizer.count} and {@linkcode LocalTokenizer.encode}. */
export interface EncodeOptions {
  /**
   * Whether the post-processor adds the model's special tokens (BOS, ...).
   * Chat prompts use `false`: the template writes them itself.
   *
   * @default {true}
   */
  readonly addSpecialTokens?: boolean;
  /**
   * Whether the added tokens split the text. `false` encodes their text as
   * any other text, as tiktoken's `encode_ordinary` does (Harmony's text
   * pieces); a tokenizer the engine's pipeline does not run cannot, and
   * throws an `EngineError` for a text that holds an added token.
   *
   * @default {true}
   */
  readonly splitAddedTokens?: boolean;
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
