/**
 * The Rust `tokenizers` crate's BPE model (`models/bpe/model.rs`), word by
 * word: `ignore_merges`, then the word's characters as vocabulary ids (byte
 * fallback and unknown tokens as `merge_word` adds them), then the merges
 * ({@linkcode BpeMerges}); each word's ids remembered in a cache. Behind a
 * ByteLevel pre-tokenizer a word is the text before the byte mapping: its
 * UTF-8 bytes stand for the byte alphabet's characters.
 *
 * @module
 */
import { EngineError } from "../common/errors.ts";
import type { BpeMerges } from "./bpe_merges.ts";

/** A BPE model, read from `tokenizer.json`. */
export interface BpeModelParts {
  /** Each vocabulary string's id. */
  readonly vocab: ReadonlyMap<string, number>;
  /** The merges over ids. */
  readonly merges: BpeMerges;
  /** The unknown token, if any. */
  readonly unkToken: string | null;
  /** Whether a run of unknown characters in a word is one unknown token. */
  readonly fuseUnk: boolean;
  /** Whether an unknown character becomes its bytes' `<0xXX>` tokens. */
  readonly byteFallback: boolean;
  /** Whether a word found whole in the vocabulary skips merging. */
  readonly ignoreMerges: boolean;
  /**
   * The character each byte stands for (ByteLevel): a word is then the
   * text before that mapping. Without it a word's code points are its
   * characters.
   */
  readonly byteAlphabet?: readonly string[];
}

/** Longer words are not remembered, which bounds the cache's memory. */
const CACHE_UP_TO = 256;
/**
 * Entries the cache holds before it starts over: one Map, so that a miss
 * costs one lookup, and a word seen again after a reset is merged once more.
 */
const CACHE_CAPACITY = 20_000;
const NOT_LOOKED_UP = -2;

/** Word-by-word BPE, with a word cache. */
export class BpeModel {
  readonly #parts: BpeModelParts;
  readonly #cache = new Map<string, number | number[]>();
  /** Each BMP character's id, -1 for none, NOT_LOOKED_UP before its first use. */
  readonly #charIds = new Int32Array(0x10000).fill(NOT_LOOKED_UP);
  /** Each byte's id (ByteLevel), -1 when its character is not in the vocabulary. */
  readonly #byteIds: Int32Array | undefined;
  /**
   * For ignore_merges on ByteLevel: a bit per hash of a vocabulary string's
   * bytes, so that most words are known not to be whole in the vocabulary
   * without building their string. A clear bit is certain; a set one is
   * checked in the vocabulary.
   */
  readonly #wholeWords: Uint8Array | undefined;
  readonly #encoder = new TextEncoder();
  #symbols = new Int32Array(256);
  #bytes = new Uint8Array(256);

  /** @param parts The model. */
  constructor(parts: BpeModelParts) {
    this.#parts = parts;
    const alphabet = parts.byteAlphabet;
    if (alphabet !== undefined) {
      this.#byteIds = Int32Array.from(
        alphabet,
        (char) => parts.vocab.get(char) ?? -1,
      );
      if (parts.ignoreMerges) {
        this.#wholeWords = wholeWordFilter(parts.vocab, alphabet);
      }
    }
  }

  /**
   * Appends the ids of words, one after the other.
   *
   * @param words The words.
   * @param out Where the ids go.
   * @throws {EngineError} When a word needs the unknown token and the vocabulary lacks it.
   */
  pushAll(words: readonly string[], out: number[]): void {
    for (let i = 0; i < words.length; i++) this.push(words[i]!, out);
  }

  /**
   * Appends a word's ids.
   *
   * @param word The word (for ByteLevel, the text before the byte mapping).
   * @param out Where the ids go.
   * @throws {EngineError} When the word needs the unknown token and the vocabulary lacks it.
   */
  push(word: string, out: number[]): void {
    // One ASCII byte of ByteLevel merges with nothing: its id is the word's.
    if (word.length === 1 && this.#byteIds !== undefined) {
      const code = word.charCodeAt(0);
      const id = code < 128 ? this.#byteIds[code]! : -1;
      if (id >= 0) {
        out.push(id);
        return;
      }
    }
    const cached = this.#cache.get(word);
    if (cached === undefined) this.#miss(word, out);
    else if (typeof cached === "number") out.push(cached);
    else for (let i = 0; i < cached.length; i++) out.push(cached[i]!);
  }

  #miss(word: string, out: number[]): void {
    const { vocab, merges } = this.#parts;
    let ids: number[];
    const byteLevel = this.#byteIds !== undefined;
    let length = byteLevel ? this.#fromBytes(word) : -1;
    const whole =
      this.#parts.ignoreMerges && (!byteLevel || this.#maybeWhole(length))
        ? vocab.get(byteLevel ? this.#mapped(length) : word)
        : undefined;
    if (whole !== undefined) ids = [whole];
    else {
      length = byteLevel ? this.#byteSymbols(length) : this.#charSymbols(word);
      const left = merges.merge(this.#symbols, length);
      ids = [];
      for (let i = 0; i < left; i++) ids.push(this.#symbols[i]!);
    }
    for (let i = 0; i < ids.length; i++) out.push(ids[i]!);
    if (word.length < CACHE_UP_TO) {
      if (this.#cache.size >= CACHE_CAPACITY) this.#cache.clear();
      this.#cache.set(word, ids.length === 1 ? ids[0]! : ids);
    }
  }

  /** The word's UTF-8 bytes into #bytes; returns how many. */
  #fromBytes(word: string): number {
    if (this.#bytes.length < word.length * 3) {
      this.#bytes = new Uint8Array(word.length * 6);
    }
    const bytes = this.#bytes;
    let length = 0;
    for (; length < word.length; length++) {
      const code = word.charCodeAt(length);
      if (code >= 128) break;
      bytes[length] = code;
    }
    if (length < word.length) {
      length = this.#encoder.encodeInto(word, bytes).written;
    }
    return length;
  }

  /** The ids of the bytes in #bytes, as merge_word adds the alphabet's characters; returns how many. */
  #byteSymbols(length: number): number {
    const byteIds = this.#byteIds!;
    const bytes = this.#bytes;
    this.#reserve(length);
    const symbols = this.#symbols;
    for (let i = 0; i < length; i++) {
      const id = byteIds[bytes[i]!]!;
      if (id < 0) return this.#slowSymbols(this.#mappedChars(length));
      symbols[i] = id;
    }
    return length;
  }

  /** The ids of the word's code points, as merge_word adds them; returns how many. */
  #charSymbols(word: string): number {
    this.#reserve(word.length);
    const symbols = this.#symbols;
    const charIds = this.#charIds;
    let length = 0;
    for (let i = 0; i < word.length; i++) {
      const code = word.charCodeAt(i);
      let id: number;
      if (code < 0xd800 || code > 0xdfff) {
        id = charIds[code]!;
        if (id === NOT_LOOKED_UP) {
          id = this.#parts.vocab.get(word[i]!) ?? -1;
          charIds[code] = id;
        }
      } else {
        const low = word.charCodeAt(i + 1);
        // A lone surrogate is a character of its own (the slow path's).
        const paired = code < 0xdc00 && low >= 0xdc00 && low <= 0xdfff;
        id = paired ? this.#parts.vocab.get(word.slice(i, i + 2)) ?? -1 : -1;
        i++;
      }
      if (id < 0) return this.#slowSymbols(Array.from(word));
      symbols[length++] = id;
    }
    return length;
  }

  /**
   * `merge_word`'s initial symbols for characters some of which are not in
   * the vocabulary: byte fallback (`<0xXX>` for each UTF-8 byte, when all
   * are in the vocabulary), else the unknown token, a run of them fused
   * under `fuse_unk`. As in the crate, a pending unknown token is added
   * when the next known character is, so byte-fallback ids added in
   * between come before it.
   */
  #slowSymbols(chars: readonly string[]): number {
    const { vocab, byteFallback, unkToken, fuseUnk } = this.#parts;
    const found: number[] = [];
    let unk = -1;
    for (const char of chars) {
      const id = vocab.get(char);
      if (id !== undefined) {
        if (unk >= 0) found.push(unk);
        unk = -1;
        found.push(id);
        continue;
      }
      if (byteFallback) {
        const bytes = [...this.#encoder.encode(char)].map((byte) =>
          vocab.get(`<0x${byte.toString(16).toUpperCase().padStart(2, "0")}>`)
        );
        if (bytes.every((byte) => byte !== undefined)) {
          found.push(...bytes);
          continue;
        }
      }
      if (unkToken === null) continue;
      const unkId = vocab.get(unkToken);
      if (unkId === undefined) {
        throw new EngineError(
          "Cannot tokenize this text: tokenizer.json's unk_token is not in its vocabulary (the Rust tokenizers crate fails too)",
        );
      }
      if (unk >= 0 && !fuseUnk) found.push(unk);
      unk = unkId;
    }
    if (unk >= 0) found.push(unk);
    this.#reserve(found.length);
    this.#symbols.set(found);
    return found.length;
  }

  /** Whether the bytes in #bytes may be a whole vocabulary string (see #wholeWords). */
  #maybeWhole(length: number): boolean {
    const filter = this.#wholeWords;
    if (filter === undefined) return true;
    const bit = bytesHash(this.#bytes, length) >>> WHOLE_WORD_SHIFT;
    return (filter[bit >>> 3]! & (1 << (bit & 7))) !== 0;
  }

  /** The ByteLevel word for the bytes in #bytes: each byte's alphabet character. */
  #mapped(length: number): string {
    return this.#mappedChars(length).join("");
  }

  #mappedChars(length: number): string[] {
    const alphabet = this.#parts.byteAlphabet!;
    const chars: string[] = [];
    for (let i = 0; i < length; i++) chars.push(alphabet[this.#bytes[i]!]!);
    return chars;
  }

  #reserve(length: number): void {
    if (this.#symbols.length < length) {
      this.#symbols = new Int32Array(length * 2);
    }
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
  vocab: ReadonlyMap<string, number>,
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
  for (const text of vocab.keys()) {
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
