/**
 * The added tokens of `tokenizer.json` as the Rust `tokenizers` crate splits
 * text around them (`tokenizer/added_vocabulary.rs`): ids as the crate gives
 * them, one leftmost-longest matcher over the tokens matched in the text as
 * written and one over the normalized ones, matched in each stretch after
 * normalization; `single_word`, `lstrip` and `rstrip` with the crate's `\w`
 * and `\s`.
 *
 * @module
 */
import type { Normalize } from "./normalizers.ts";
import { isSpace, WORD } from "./patterns.ts";

/** A stretch of text, or the id of an added token. */
export type Piece = string | number;

/** An added token as tokenizer.json declares it. */
interface AddedToken {
  readonly content: string;
  readonly single_word: boolean;
  readonly lstrip: boolean;
  readonly rstrip: boolean;
  readonly normalized: boolean;
}

const ENDS_WITH_WORD = new RegExp(`[${WORD}]$`, "u");
const STARTS_WITH_WORD = new RegExp(`^[${WORD}]`, "u");
const NO_MATCH: [number, number] = [-1, -1];

/** A trie node over UTF-16 code units: its children, and the id of the token ending here. */
interface Node {
  readonly next: Map<number, Node>;
  ending: number;
}

/** One of the crate's two matchers: the tokens, and each code unit a token starts with. */
class Matcher {
  readonly #root: Node = { next: new Map(), ending: -1 };
  readonly #starts = new Uint8Array(0x10000);
  readonly #tokens: ReadonlyMap<number, AddedToken>;
  #empty = true;

  constructor(tokens: ReadonlyMap<number, AddedToken>) {
    this.#tokens = tokens;
  }

  add(pattern: string, id: number): void {
    let node = this.#root;
    for (let i = 0; i < pattern.length; i++) {
      const unit = pattern.charCodeAt(i);
      let next = node.next.get(unit);
      if (next === undefined) {
        next = { next: new Map(), ending: -1 };
        node.next.set(unit, next);
      }
      node = next;
    }
    node.ending = id;
    this.#starts[pattern.charCodeAt(0)] = 1;
    this.#empty = false;
  }

  /** `find_matches`: the text cut at the tokens, each token's stretch as its id. */
  split(text: string, out: Piece[]): void {
    if (this.#empty || !this.#mayMatch(text)) {
      if (text.length > 0) out.push(text);
      return;
    }
    let offset = 0;
    for (let at = 0; at < text.length;) {
      const [id, end] = this.#starts[text.charCodeAt(at)] === 1
        ? this.#longest(text, at)
        : NO_MATCH;
      if (id < 0) {
        at++;
        continue;
      }
      let start = at;
      let stop = end;
      at = end;
      const token = this.#tokens.get(id)!;
      if (
        token.single_word &&
        (ENDS_WITH_WORD.test(text.slice(Math.max(0, start - 2), start)) ||
          STARTS_WITH_WORD.test(text.slice(stop, stop + 2)))
      ) continue;
      if (token.lstrip) {
        while (start > offset && isSpace(text.charCodeAt(start - 1))) start--;
      }
      if (token.rstrip) {
        while (stop < text.length && isSpace(text.charCodeAt(stop))) stop++;
      }
      if (offset < start) out.push(text.slice(offset, start));
      out.push(id);
      offset = stop;
    }
    if (offset < text.length) out.push(text.slice(offset));
  }

  /** Whether a token may start in the text: most texts hold none of their first code units. */
  #mayMatch(text: string): boolean {
    for (let i = 0; i < text.length; i++) {
      if (this.#starts[text.charCodeAt(i)] === 1) return true;
    }
    return false;
  }

  /** The id and end of the longest token at `at`, or -1. */
  #longest(text: string, at: number): [number, number] {
    let node: Node | undefined = this.#root;
    let found = -1;
    let end = at;
    for (let i = at; i < text.length; i++) {
      node = node.next.get(text.charCodeAt(i));
      if (node === undefined) break;
      if (node.ending >= 0) {
        found = node.ending;
        end = i + 1;
      }
    }
    return [found, end];
  }
}

/** The added tokens, and how they split text. */
export class AddedVocabulary {
  /** Each added token's content, by id. */
  readonly contents: ReadonlyMap<number, string>;
  readonly #raw: Matcher;
  readonly #normalized: Matcher;

  private constructor(
    tokens: ReadonlyMap<number, AddedToken>,
    normalize: Normalize | null,
  ) {
    this.#raw = new Matcher(tokens);
    this.#normalized = new Matcher(tokens);
    const contents = new Map<number, string>();
    for (const [id, token] of tokens) {
      contents.set(id, token.content);
      if (!token.normalized) this.#raw.add(token.content, id);
      else {
        const pattern = normalize === null
          ? token.content
          : normalize(token.content);
        if (pattern !== "") this.#normalized.add(pattern, id);
      }
    }
    this.contents = contents;
  }

  /**
   * The added tokens of tokenizer.json, with the ids the crate gives them:
   * a content already added or in the model's vocabulary keeps that id,
   * any other takes the next one after the vocabulary. `undefined` when an
   * entry is not an added token of the crate's format.
   *
   * @param entries The `added_tokens` array.
   * @param vocab The model's vocabulary.
   * @param normalize The normalizer, for the normalized tokens' patterns.
   * @returns The added vocabulary, or `undefined`.
   */
  static of(
    entries: unknown,
    vocab: ReadonlyMap<string, number>,
    normalize: Normalize | null,
  ): AddedVocabulary | undefined {
    if (!Array.isArray(entries)) return undefined;
    const ids = new Map<string, number>();
    const tokens = new Map<number, AddedToken>();
    let next = vocab.size;
    for (const entry of entries) {
      if (!isAddedToken(entry)) return undefined;
      if (entry.content === "") continue;
      let id = ids.get(entry.content) ?? vocab.get(entry.content);
      if (id === undefined) id = next++;
      ids.set(entry.content, id);
      tokens.set(id, entry);
    }
    return new AddedVocabulary(tokens, normalize);
  }

  /**
   * The crate's first split: the text as written, cut at the tokens that
   * are not normalized.
   *
   * @param text The text.
   * @param out Where the pieces go.
   */
  splitRaw(text: string, out: Piece[]): void {
    this.#raw.split(text, out);
  }

  /**
   * The crate's second split: a normalized stretch cut at the normalized tokens.
   *
   * @param text The normalized stretch.
   * @param out Where the pieces go.
   */
  splitNormalized(text: string, out: Piece[]): void {
    this.#normalized.split(text, out);
  }
}

function isAddedToken(value: unknown): value is AddedToken {
  if (typeof value !== "object" || value === null) return false;
  const token: Record<string, unknown> = { ...value };
  return typeof token.content === "string" &&
    ["single_word", "lstrip", "rstrip", "normalized"].every((flag) =>
      typeof token[flag] === "boolean"
    );
}
