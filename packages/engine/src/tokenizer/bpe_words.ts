/**
 * The ids of one pre-tokenized word of a BPE model, merged over integer
 * symbols ({@linkcode BpeMerges}) and remembered in a word cache; a word
 * the integer path does not cover goes through the library's own model.
 *
 * @module
 */
import type { BpeMerges, BpeModelParts } from "./bpe_merges.ts";

/** What is read of @huggingface/tokenizers' BPE model (0.2.x). */
export interface LibraryBpeModel extends BpeModelParts {
  /** Whether a word found whole in the vocabulary skips merging. */
  readonly ignore_merges: boolean;
  /** Whether the model joins runs of unknown tokens across words. */
  readonly fuse_unk: boolean;
  /** The id of the unknown token. */
  readonly unk_token_id: number | undefined;
  /** The library's word-by-word tokenization: merges, byte fallback, unknown tokens. */
  encode(words: string[]): string[];
}

/** What {@linkcode BpeWords} tokenizes with. */
export interface BpeWordsParts {
  /** The library's BPE model, added tokens already in its vocabulary. */
  readonly model: LibraryBpeModel;
  /** The model's merges over symbols. */
  readonly merges: BpeMerges;
  /** The id the library's `encode` gives a token string. */
  readonly idOf: (token: string) => number;
  /** The token strings to which `idOf` may give an id other than the model's own. */
  readonly reassigned: Iterable<string>;
}

/** Options of {@linkcode BpeWords}. */
export interface BpeWordsOptions {
  /**
   * The string each byte stands for (ByteLevel): a piece is then the text
   * before that mapping, its UTF-8 bytes the initial symbols. Without it a
   * piece is the model's word, its code points the initial symbols.
   *
   * @default {undefined}
   */
  readonly byteAlphabet?: readonly string[];
}

/** Words of more initial symbols take the library's queue: the scan in BpeMerges.merge is quadratic. */
const SCAN_UP_TO = 64;
/** Longer pieces are not remembered, which bounds the cache's memory. */
const CACHE_UP_TO = 256;
/**
 * Entries the cache holds before it starts over, twice the library's LRU:
 * one Map, so that a miss costs one lookup, and a word seen again after a
 * reset is merged once more.
 */
const CACHE_CAPACITY = 20_000;

/** Word-by-word BPE over integer symbols, with a word cache. */
export class BpeWords {
  readonly #model: LibraryBpeModel;
  readonly #merges: BpeMerges;
  readonly #idOf: (token: string) => number;
  /** Each symbol's output id, or -1 when the library would look further (byte fallback, unknown). */
  readonly #outIds: Int32Array;
  readonly #byteSymbols: Int32Array | undefined;
  readonly #byteChars: readonly string[] | undefined;
  readonly #cache = new Map<string, number | number[]>();
  /** The id of each one-byte ASCII piece (ByteLevel), or -1 to look further. */
  readonly #ascii = new Int32Array(128).fill(-1);
  /**
   * For ignore_merges on ByteLevel: a bit per hash of a vocabulary string's
   * bytes, so that most words are known not to be whole in the vocabulary
   * without building their string. A clear bit is certain; a set one is
   * checked in the vocabulary.
   */
  readonly #wholeWords: Uint8Array | undefined;
  readonly #encoder = new TextEncoder();
  #symbols = new Int32Array(SCAN_UP_TO * 3);
  #bytes = new Uint8Array(SCAN_UP_TO * 3);
  /** Whether every initial symbol of the last word was found. */
  #known = true;

  /**
   * @param parts The model, its merges, and how the library maps token strings to ids.
   * @param options The byte alphabet, for ByteLevel models.
   */
  constructor(parts: BpeWordsParts, options: BpeWordsOptions = {}) {
    const { model, merges, idOf } = parts;
    this.#model = model;
    this.#merges = merges;
    this.#idOf = idOf;
    // A symbol's id is its own when it is a vocabulary string; idOf may
    // give another only to the strings it reads elsewhere first.
    const outIds = new Int32Array(merges.strings.length).fill(-1);
    const set = (text: string): void => {
      const symbol = merges.symbolOf(text);
      const id = idOf(text);
      if (symbol >= 0 && model.tokens_to_ids.has(text)) {
        outIds[symbol] = Number.isInteger(id) && id >= 0 && id <= 0x7fffffff
          ? id
          : -1;
      }
    };
    for (const [text, id] of model.tokens_to_ids) {
      if (model.vocab[id] === text) outIds[id] = id;
      else set(text);
    }
    for (const text of parts.reassigned) set(text);
    this.#outIds = outIds;
    const alphabet = options.byteAlphabet;
    if (alphabet !== undefined) {
      this.#byteChars = alphabet;
      this.#byteSymbols = Int32Array.from(
        alphabet,
        (char) => merges.symbolOf(char),
      );
      for (let code = 0; code < 128; code++) {
        const symbol = this.#byteSymbols[code]!;
        if (symbol < 0 || this.#isUnknown(merges.strings[symbol]!)) continue;
        this.#ascii[code] = outIds[symbol] ?? -1;
      }
      if (model.ignore_merges) {
        this.#wholeWords = wholeWordFilter(model, alphabet);
      }
    }
  }

  /**
   * Appends a piece's ids.
   *
   * @param piece The piece (see {@linkcode BpeWordsOptions.byteAlphabet}).
   * @param out Where the ids go.
   * @returns Whether the ids may join their neighbours under the model's
   * `fuse_unk` (only ever when it is set): the caller then asks the library.
   */
  push(piece: string, out: number[]): boolean {
    // One symbol merges with nothing: its id, if it has one, is the word's.
    if (piece.length === 1) {
      const code = piece.charCodeAt(0);
      const id = code < 128 ? this.#ascii[code]! : -1;
      if (id >= 0) {
        out.push(id);
        return false;
      }
    }
    const cached = this.#cache.get(piece);
    if (cached === undefined) return this.#miss(piece, out);
    if (typeof cached === "number") out.push(cached);
    else for (let i = 0; i < cached.length; i++) out.push(cached[i]!);
    return false;
  }

  #miss(piece: string, out: number[]): boolean {
    const model = this.#model;
    const bytes = this.#byteChars !== undefined;
    const length = bytes ? this.#fromBytes(piece) : this.#fromChars(piece);
    // The model's word: for ByteLevel, each byte's alphabet string.
    let mapped: string | undefined;
    const word = () => mapped ??= bytes ? this.#mapped(piece, length) : piece;
    let ids = this.#known && length <= SCAN_UP_TO
      ? this.#merged(length)
      : undefined;
    let unknown = false;
    // Merged into one vocabulary token, the word is what ignore_merges
    // would give whole: only other words need the lookup.
    if (
      model.ignore_merges && ids?.length !== 1 && this.#maybeWhole(length) &&
      model.tokens_to_ids.has(word())
    ) {
      ids = [this.#idOf(word())];
      unknown = this.#isUnknown(word());
    } else if (ids !== undefined && model.fuse_unk) {
      const strings = this.#merges.strings;
      for (let i = 0; i < ids.length; i++) {
        if (this.#isUnknown(strings[this.#symbols[i]!]!)) unknown = true;
      }
    }
    if (ids === undefined) {
      ids = model.encode([word()]).map(this.#idOf);
      unknown = model.fuse_unk;
    }
    for (let i = 0; i < ids.length; i++) out.push(ids[i]!);
    if (!unknown && piece.length < CACHE_UP_TO) {
      if (this.#cache.size >= CACHE_CAPACITY) this.#cache.clear();
      this.#cache.set(piece, ids.length === 1 ? ids[0]! : ids);
    }
    return unknown;
  }

  /** The merged ids of the symbols, or `undefined` if one needs the library's fallback. */
  #merged(length: number): number[] | undefined {
    const symbols = this.#symbols;
    const left = this.#merges.merge(symbols, length);
    const ids: number[] = [];
    for (let i = 0; i < left; i++) {
      // Symbols made after the table was built are looked up by the library.
      const id = this.#outIds[symbols[i]!];
      if (id === undefined || id < 0) return undefined;
      ids.push(id);
    }
    return ids;
  }

  /** Whether the bytes in #bytes may be a whole vocabulary string (see #wholeWords). */
  #maybeWhole(length: number): boolean {
    const filter = this.#wholeWords;
    if (filter === undefined) return true;
    const bit = bytesHash(this.#bytes, length) >>> WHOLE_WORD_SHIFT;
    return (filter[bit >>> 3]! & (1 << (bit & 7))) !== 0;
  }

  /** Whether fuse_unk would take a token string for the unknown token. */
  #isUnknown(token: string): boolean {
    const model = this.#model;
    return model.fuse_unk &&
      (model.tokens_to_ids.get(token) ?? model.unk_token_id) ===
        model.unk_token_id;
  }

  /** Code points to symbols, -1 where one has none; returns how many. */
  #fromChars(word: string): number {
    if (this.#symbols.length < word.length) {
      this.#symbols = new Int32Array(word.length * 2);
    }
    const symbols = this.#symbols;
    let length = 0;
    let known = true;
    for (const char of word) {
      const symbol = this.#merges.symbolOf(char);
      if (symbol < 0) known = false;
      symbols[length++] = symbol;
    }
    this.#known = known;
    return length;
  }

  /** UTF-8 bytes to symbols, -1 where one has none, the bytes kept in #bytes; returns how many. */
  #fromBytes(piece: string): number {
    if (this.#bytes.length < piece.length * 3) {
      this.#bytes = new Uint8Array(piece.length * 6);
      this.#symbols = new Int32Array(piece.length * 6);
    }
    const bytes = this.#bytes;
    let length = 0;
    for (; length < piece.length; length++) {
      const code = piece.charCodeAt(length);
      if (code >= 128) break;
      bytes[length] = code;
    }
    if (length < piece.length) {
      length = this.#encoder.encodeInto(piece, bytes).written;
    }
    const symbols = this.#symbols;
    const byteSymbols = this.#byteSymbols!;
    let known = true;
    for (let i = 0; i < length; i++) {
      const symbol = byteSymbols[bytes[i]!]!;
      if (symbol < 0) known = false;
      symbols[i] = symbol;
    }
    this.#known = known;
    return length;
  }

  /** The model's word for the bytes in #bytes: each byte's alphabet string. */
  #mapped(piece: string, length: number): string {
    const chars = this.#byteChars!;
    const bytes = this.#bytes;
    // An ASCII piece whose bytes after the first stand for themselves (a
    // word after its space) is mostly the piece: no string per byte.
    if (length === piece.length && length > 0) {
      let same = true;
      for (let i = 1; i < length && same; i++) {
        same = chars[bytes[i]!]!.charCodeAt(0) === bytes[i] &&
          chars[bytes[i]!]!.length === 1;
      }
      if (same) {
        const first = chars[bytes[0]!]!;
        return first === piece[0] ? piece : first + piece.slice(1);
      }
    }
    let word = "";
    for (let i = 0; i < length; i++) word += chars[bytes[i]!];
    return word;
  }
}

/** The filter has 2 ** (32 - WHOLE_WORD_SHIFT) bits: 4M, a few percent of them set by a vocabulary. */
const WHOLE_WORD_SHIFT = 10;

/** FNV-1a over bytes. */
function bytesHash(bytes: Uint8Array, length: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < length; i++) {
    hash = Math.imul(hash ^ bytes[i]!, 0x01000193);
  }
  return hash >>> 0;
}

/**
 * The bits of the vocabulary strings made of byte-alphabet characters,
 * hashed over their bytes; a string with any other character is never a
 * ByteLevel word, so it sets none.
 */
function wholeWordFilter(
  model: LibraryBpeModel,
  alphabet: readonly string[],
): Uint8Array | undefined {
  const byteOf = new Int16Array(0x10000).fill(-1);
  for (let byte = 0; byte < alphabet.length; byte++) {
    const char = alphabet[byte]!;
    // Words split back into bytes one code unit each, without ambiguity.
    if (char.length !== 1 || byteOf[char.charCodeAt(0)] !== -1) {
      return undefined;
    }
    byteOf[char.charCodeAt(0)] = byte;
  }
  const filter = new Uint8Array(2 ** (32 - WHOLE_WORD_SHIFT) / 8);
  let bytes = new Uint8Array(64);
  for (const text of model.tokens_to_ids.keys()) {
    if (bytes.length < text.length) bytes = new Uint8Array(text.length * 2);
    let length = 0;
    for (; length < text.length; length++) {
      const byte = byteOf[text.charCodeAt(length)]!;
      if (byte < 0) break;
      bytes[length] = byte;
    }
    if (length < text.length) continue;
    const bit = bytesHash(bytes, length) >>> WHOLE_WORD_SHIFT;
    filter[bit >>> 3]! |= 1 << (bit & 7);
  }
  return filter;
}
