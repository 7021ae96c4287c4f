/**
 * Exact tokenization from a model's `tokenizer.json`, with the pure-JS
 * `@huggingface/tokenizers`, which gives the same ids as the Rust
 * `tokenizers` crate that vLLM uses (see `tests/conformance/tokenizer_oracle_test.ts`).
 *
 * @module
 */
import { Tokenizer } from "@huggingface/tokenizers";
import { BpeMerges, NO_RANK } from "./bpe_merges.ts";
import { specialTokensOf } from "./config.ts";
import { createFastEncoder } from "./fast_encode.ts";
import { GenerationCache } from "./generation_cache.ts";
import { useRustWhitespace } from "./whitespace.ts";

export { readModelFolder } from "./files.ts";
export type { ModelFolder } from "./files.ts";

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
  const tokenizer = new Tokenizer(json, config);
  const internals = tokenizer as unknown as {
    model?: unknown;
    pre_tokenizer?: unknown;
  };
  useRustWhitespace(json.pre_tokenizer, internals.pre_tokenizer);
  const merges = bpeMergesOf(internals.model);
  speedUpBpe(internals.model, merges);
  speedUpByteLevel(internals.pre_tokenizer);
  const fast = merges && createFastEncoder(tokenizer, json, merges);
  const addedTokens = [...tokenizer.get_added_tokens_decoder().values()]
    .map((token) => token.content)
    .sort((a, b) => b.length - a.length);
  const specialTokens = Object.freeze(specialTokensOf(config));
  function encode(text: string, options?: EncodeOptions): number[] {
    const add_special_tokens = options?.addSpecialTokens ?? true;
    return fast === undefined
      ? tokenizer.encode(text, { add_special_tokens }).ids
      : fast.encode(text, add_special_tokens);
  }
  // The tokens before they become ids: one id per token, so counting
  // them skips the id lookups and the attention mask encode() builds.
  const helper = (tokenizer as unknown as {
    tokenize_helper?: (
      text: string,
      options: { add_special_tokens: boolean },
    ) => { tokens?: unknown };
  }).tokenize_helper?.bind(tokenizer);
  function count(text: string, options?: EncodeOptions): number {
    if (fast !== undefined) return encode(text, options).length;
    const add_special_tokens = options?.addSpecialTokens ?? true;
    const tokens = helper?.(text, { add_special_tokens }).tokens;
    return Array.isArray(tokens) ? tokens.length : encode(text, options).length;
  }
  return {
    encode,
    count,
    decode: (ids) => tokenizer.decode([...ids], { skip_special_tokens: false }),
    tokenStrings: (ids) => ids.map((id) => tokenizer.id_to_token(id) ?? ""),
    isTokenId: (id) =>
      Number.isSafeInteger(id) && id >= 0 &&
      tokenizer.id_to_token(id) !== undefined,
    addedTokens: Object.freeze(addedTokens),
    specialTokens,
  };
}

/** A node of the BPE merge queue of @huggingface/tokenizers. */
interface BpeNode {
  token: string;
  bias: number;
  score?: number;
  next: BpeNode | null;
}

/** The merges of the library's BPE model over integer symbols, when it has the expected shape. */
function bpeMergesOf(found: unknown): BpeMerges | undefined {
  // The library's models are callable objects: functions with a prototype.
  if (typeof found !== "function" && !isObject(found)) return undefined;
  const model = found as Record<string, unknown>;
  const merges = model.merges;
  if (
    !(model.bpe_ranks instanceof Map) || typeof model.add_node !== "function" ||
    !(model.tokens_to_ids instanceof Map) || !Array.isArray(model.vocab) ||
    !Array.isArray(merges) ||
    !merges.every((pair) =>
      Array.isArray(pair) && typeof pair[0] === "string" &&
      typeof pair[1] === "string"
    )
  ) return undefined;
  return new BpeMerges(
    model as unknown as ConstructorParameters<typeof BpeMerges>[0],
  );
}

/**
 * Speed-ups of @huggingface/tokenizers' BPE model (0.2.x) for the words
 * its own path still tokenizes (tokenizers the fast encoder does not
 * reproduce, and its rare fallbacks), changing no result: merge ranks read
 * from the integer table by symbol pair instead of a
 * `JSON.stringify([a, b])` key built per candidate pair (the JSON-keyed
 * map, used nowhere else, is released); a word of up to 48 code points
 * merged by scanning its pairs' ranks instead of through the library's
 * priority queue of node objects; and the word cache as two generations of
 * Maps instead of an LRU that deletes and re-inserts on every hit.
 */
function speedUpBpe(found: unknown, merges: BpeMerges | undefined): void {
  if (typeof found !== "function" && !isObject(found)) return;
  const model = found as Record<string, unknown>;
  if (merges !== undefined) {
    model.add_node = function addNode(
      queue: { push(node: BpeNode): void },
      node: BpeNode,
    ): void {
      const rank = merges.rankOf(
        merges.symbolOf(node.token),
        merges.symbolOf(node.next!.token),
      );
      if (rank !== NO_RANK) {
        node.score = rank + node.bias;
        queue.push(node);
      }
    };
    model.bpe_ranks = new Map();
    const original = model.bpe;
    if (
      typeof original === "function" && !model.end_of_word_suffix &&
      !model.continuing_subword_suffix &&
      typeof model.max_length_to_cache === "number"
    ) {
      const symbols = new Int32Array(SCAN_MERGES_UP_TO);
      model.bpe = function bpe(this: BpeModelShape, word: string): string[] {
        const cached = this.cache.get(word);
        if (cached !== undefined) return cached;
        let length = 0;
        for (const char of word) {
          const symbol = length < SCAN_MERGES_UP_TO
            ? merges.symbolOf(char)
            : -1;
          // Longer words, and unknown symbols, keep the library's queue.
          if (symbol < 0) {
            return (original as (word: string) => string[]).call(this, word);
          }
          symbols[length++] = symbol;
        }
        const left = merges.merge(symbols, length);
        const tokens: string[] = [];
        for (let i = 0; i < left; i++) {
          tokens.push(merges.strings[symbols[i]!]!);
        }
        if (word.length < this.max_length_to_cache) {
          this.cache.put(word, tokens);
        }
        return tokens;
      };
    }
  }
  const cache = model.cache;
  const capacity = model.cache_capacity;
  if (
    isObject(cache) && typeof cache.get === "function" &&
    typeof cache.put === "function" && typeof capacity === "number" &&
    Number.isSafeInteger(capacity) && capacity > 0
  ) model.cache = new GenerationCache(capacity);
}

/** What the faster `bpe` reads of the library's BPE model. */
interface BpeModelShape {
  cache: {
    get(word: string): string[] | undefined;
    put(word: string, tokens: string[]): void;
  };
  max_length_to_cache: number;
}

/** Words of at most this many code points merge by scanning; longer ones take the library's queue. */
const SCAN_MERGES_UP_TO = 48;

/** The shape of @huggingface/tokenizers' ByteLevel pre-tokenizer (0.2.x) that the fast path relies on. */
interface ByteLevelShape {
  add_prefix_space: boolean;
  use_regex: boolean;
  pattern: RegExp;
  byte_encoder: Record<number, string>;
  pre_tokenize_text: (text: string, options?: unknown) => string[];
}

/**
 * A speed-up of @huggingface/tokenizers' ByteLevel pre-tokenizer (0.2.x),
 * found in a pre-tokenizer or a Sequence of them, that changes no result:
 * a piece of ASCII text maps to the byte alphabet code unit by code unit
 * (its UTF-8 bytes are its code units), without a TextEncoder call and an
 * array per piece; any other piece takes the library's path.
 */
function speedUpByteLevel(found: unknown, depth = 0): void {
  if (depth > 8 || typeof found !== "function" && !isObject(found)) return;
  const node = found as Record<string, unknown>;
  if (Array.isArray(node.tokenizers)) {
    for (const inner of node.tokenizers) speedUpByteLevel(inner, depth + 1);
    return;
  }
  const encoder = node.byte_encoder;
  if (
    !isObject(encoder) || typeof node.pre_tokenize_text !== "function" ||
    !(node.pattern instanceof RegExp) ||
    !(node.text_encoder instanceof TextEncoder) ||
    typeof node.add_prefix_space !== "boolean" ||
    typeof node.use_regex !== "boolean"
  ) return;
  const ascii: string[] = [];
  for (let byte = 0; byte < 128; byte++) {
    const mapped = encoder[byte];
    if (typeof mapped !== "string") return;
    ascii.push(mapped);
  }
  const bytes = new TextEncoder();
  const map = (piece: string): string => {
    let out = "";
    for (let i = 0; i < piece.length; i++) {
      const code = piece.charCodeAt(i);
      if (code >= 128) {
        return Array.from(bytes.encode(piece), (byte) => encoder[byte]).join(
          "",
        );
      }
      out += ascii[code];
    }
    return out;
  };
  node.pre_tokenize_text = function preTokenizeText(
    this: ByteLevelShape,
    text: string,
  ): string[] {
    if (this.add_prefix_space && !text.startsWith(" ")) text = " " + text;
    const pieces = this.use_regex ? text.match(this.pattern) ?? [] : [text];
    return pieces.map(map);
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
