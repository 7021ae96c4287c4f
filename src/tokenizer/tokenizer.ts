/**
 * Exact tokenization from a model's `tokenizer.json`, with the pure-JS
 * `@huggingface/tokenizers`, which gives the same ids as the Rust
 * `tokenizers` crate that vLLM uses (see `tests/tokenizer_oracle_test.ts`).
 *
 * @module
 */
import { Tokenizer } from "@huggingface/tokenizers";
import { specialTokensOf } from "./config.ts";
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
  speedUpBpe(internals.model);
  speedUpByteLevel(internals.pre_tokenizer);
  const addedTokens = [...tokenizer.get_added_tokens_decoder().values()]
    .map((token) => token.content)
    .sort((a, b) => b.length - a.length);
  const specialTokens = Object.freeze(specialTokensOf(config));
  function encode(text: string, options?: EncodeOptions): number[] {
    return tokenizer.encode(text, {
      add_special_tokens: options?.addSpecialTokens ?? true,
    }).ids;
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

/**
 * Three speed-ups of @huggingface/tokenizers' BPE model (0.2.x) that change no
 * result, applied only when the model has the expected shape: merge ranks
 * read from a Map of Maps by pair instead of a `JSON.stringify([a, b])` key
 * built per candidate pair (the JSON-keyed map, used nowhere else, is
 * released), and the word cache as two generations of Maps instead of an
 * LRU that deletes and re-inserts on every hit; and a word of up to 48
 * code points merged by scanning its pairs' ranks instead of through the
 * library's priority queue of node objects. Together they more than halve
 * the time to tokenize fresh text (bench/local_counting.ts); the oracle
 * tests and tests/local_worker_test.ts hold the ids equal.
 */
function speedUpBpe(found: unknown): void {
  // The library's models are callable objects: functions with a prototype.
  if (typeof found !== "function" && !isObject(found)) return;
  const model = found as Record<string, unknown>;
  const merges = model.merges;
  if (
    model.bpe_ranks instanceof Map && typeof model.add_node === "function" &&
    Array.isArray(merges) &&
    merges.every((pair) =>
      Array.isArray(pair) && typeof pair[0] === "string" &&
      typeof pair[1] === "string"
    )
  ) {
    // In merge order, so that a repeated pair keeps its last rank, as the
    // library's `new Map(entries)` does.
    const ranks = new Map<string, Map<string, number>>();
    merges.forEach(([a, b]: [string, string], rank) => {
      let after = ranks.get(a);
      if (after === undefined) ranks.set(a, after = new Map());
      after.set(b, rank);
    });
    model.add_node = function addNode(
      queue: { push(node: BpeNode): void },
      node: BpeNode,
    ): void {
      const rank = ranks.get(node.token)?.get(node.next!.token);
      if (rank !== undefined) {
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
      model.bpe = function bpe(this: BpeModelShape, word: string): string[] {
        const cached = this.cache.get(word);
        if (cached !== undefined) return cached;
        const symbols = Array.from(word);
        // Longer words keep the library's queue: the scan below is quadratic.
        if (symbols.length > SCAN_MERGES_UP_TO) {
          return (original as (word: string) => string[]).call(this, word);
        }
        mergeByRank(symbols, ranks);
        if (word.length < this.max_length_to_cache) {
          this.cache.put(word, symbols);
        }
        return symbols;
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

/**
 * BPE merges in place: repeatedly the adjacent pair of lowest rank, the
 * leftmost among equals, which is the order of the library's queue (score
 * = rank + position / length) and of the Rust crate. Each pair's rank is
 * looked up once, and again only for the two pairs a merge changes.
 */
function mergeByRank(
  symbols: string[],
  ranks: ReadonlyMap<string, ReadonlyMap<string, number>>,
): void {
  const rankOf = (i: number): number =>
    ranks.get(symbols[i]!)?.get(symbols[i + 1]!) ?? Infinity;
  const pairRanks: number[] = [];
  for (let i = 0; i < symbols.length - 1; i++) pairRanks.push(rankOf(i));
  for (;;) {
    let best = Infinity;
    let at = -1;
    for (let i = 0; i < pairRanks.length; i++) {
      if (pairRanks[i]! < best) {
        best = pairRanks[i]!;
        at = i;
      }
    }
    if (at < 0) return;
    symbols.splice(at, 2, symbols[at]! + symbols[at + 1]!);
    pairRanks.splice(at, 1);
    if (at > 0) pairRanks[at - 1] = rankOf(at - 1);
    if (at < pairRanks.length) pairRanks[at] = rankOf(at);
  }
}

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

/**
 * A bounded memo without per-hit bookkeeping: entries go to the current
 * generation; when it is full it becomes the old one (the previous old one
 * is dropped), and a hit in the old one moves forward.
 */
class GenerationCache<V> {
  readonly #capacity: number;
  #current = new Map<string, V>();
  #old = new Map<string, V>();

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  get(key: string): V | undefined {
    const value = this.#current.get(key);
    if (value !== undefined) return value;
    const old = this.#old.get(key);
    if (old !== undefined) this.put(key, old);
    return old;
  }

  put(key: string, value: V): void {
    if (this.#current.size >= this.#capacity) {
      this.#old = this.#current;
      this.#current = new Map();
    }
    this.#current.set(key, value);
  }

  clear(): void {
    this.#current = new Map();
    this.#old = new Map();
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
