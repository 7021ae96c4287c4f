/**
 * A tiktoken vocabulary as a {@linkcode LocalTokenizer}: the allowed special
 * tokens split the text first (leftmost, longest), each stretch between
 * them is cut by the tokenizer class's own pre-split, then by the split
 * pattern, and each piece's UTF-8 bytes merge by rank (tiktoken_bpe.ts).
 * A lone surrogate becomes U+FFFD, as tiktoken's `encode` retries a text
 * that is not valid UTF-8.
 *
 * @module
 */
import { AddedVocabulary, type Piece } from "./added_vocabulary.ts";
import { BYTE_ALPHABET } from "./pipeline.ts";
import { encodePiece } from "./tiktoken_bpe.ts";
import type { EncodeOptions, LocalTokenizer } from "./local_tokenizer.ts";

/** What a tiktoken tokenizer is built from. */
export interface TiktokenOptions {
  /** Each token's bytes (Latin-1) and rank: its id. */
  readonly ranks: ReadonlyMap<string, number>;
  /** The split pattern ({@linkcode tiktokenPattern}). */
  readonly pattern: RegExp;
  /** Each special token's content and id. */
  readonly specials: ReadonlyMap<string, number>;
  /**
   * The special tokens that split text (tiktoken's `allowed_special`); the
   * others are encoded as ordinary text.
   *
   * @default {undefined} all of `specials`
   */
  readonly allowed?: ReadonlySet<string>;
  /**
   * A token's string for `/tokenize`'s `token_strs`, from its bytes (Latin-1).
   *
   * @default {undefined} GPT-2's byte-level alphabet
   */
  readonly tokenString?: (bytes: string) => string;
  /**
   * Cuts a stretch between special tokens before the pattern runs.
   *
   * @default {undefined} no cut
   */
  readonly preSplit?: (text: string) => string[];
  /** The special-token variables templates receive. */
  readonly specialTokens: Readonly<Record<string, string>>;
}

const ASCII = /^[\0-\x7f]*$/;
const UTF8 = new TextEncoder();

/**
 * Builds the tokenizer.
 *
 * @example Merge by rank
 * ```ts
 * import { tiktokenTokenizer } from "./tiktoken_tokenizer.ts";
 * const tokenizer = tiktokenTokenizer({
 *   ranks: new Map([["a", 0], ["b", 1], ["ab", 2]]),
 *   pattern: /[ab]+/gv,
 *   specials: new Map([["<s>", 3]]),
 *   specialTokens: {},
 * });
 * console.assert(tokenizer.encode("aba<s>").join() === "2,0,3");
 * ```
 *
 * @param options The vocabulary, pattern and special tokens.
 * @returns The tokenizer.
 */
export function tiktokenTokenizer(options: TiktokenOptions): LocalTokenizer {
  const { ranks, pattern, specials, preSplit = (text) => [text] } = options;
  const { allowed, tokenString = byteLevel } = options;
  const splitting = [...specials.keys()].filter((content) =>
    allowed === undefined || allowed.has(content)
  );
  const added = AddedVocabulary.of(
    splitting.map((content) => ({
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
    })),
    specials,
    null,
  )!;
  const pushText = (text: string, out: number[]): void => {
    for (let part of preSplit(text)) {
      if (!part.isWellFormed()) part = part.toWellFormed();
      for (const [match] of part.matchAll(pattern)) {
        encodePiece(ASCII.test(match) ? match : latin1(match), ranks, out);
      }
    }
  };
  const encode = (text: string, options?: EncodeOptions): number[] => {
    const out: number[] = [];
    const pieces: Piece[] = [];
    if (options?.splitAddedTokens === false) pieces.push(text);
    else added.splitRaw(text, pieces);
    for (const piece of pieces) {
      if (typeof piece === "number") out.push(piece);
      else pushText(piece, out);
    }
    return out;
  };
  const named = new Map([...specials].map(([content, id]) => [id, content]));
  let bytesOf: string[] | undefined;
  const bytes = (id: number): string | undefined =>
    (bytesOf ??= invert(ranks))[id] ?? named.get(id);
  return {
    encode,
    count: (text, options) => encode(text, options).length,
    decode: (ids) =>
      new TextDecoder().decode(
        Uint8Array.from(
          ids.map((id) =>
            named.has(id) ? latin1(named.get(id)!) : bytes(id) ?? ""
          ).join(""),
          (char) => char.charCodeAt(0),
        ),
      ),
    tokenStrings: (ids) =>
      ids.map((id) => named.get(id) ?? tokenString(bytes(id) ?? "")),
    isTokenId: (id) => Number.isSafeInteger(id) && bytes(id) !== undefined,
    addedTokens: Object.freeze(splitting.sort((a, b) => b.length - a.length)),
    specialTokens: options.specialTokens,
  };
}

function byteLevel(bytes: string): string {
  return [...bytes].map((c) => BYTE_ALPHABET[c.charCodeAt(0)]).join("");
}

/** A text's UTF-8 bytes as a Latin-1 string. */
function latin1(text: string): string {
  let out = "";
  for (const byte of UTF8.encode(text)) out += String.fromCharCode(byte);
  return out;
}

function invert(ranks: ReadonlyMap<string, number>): string[] {
  const bytes: string[] = [];
  for (const [token, rank] of ranks) bytes[rank] = token;
  return bytes;
}
