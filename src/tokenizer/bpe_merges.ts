/**
 * A BPE model's merges over integer symbols: every string that a merge reads
 * or makes gets a symbol (a vocabulary string its own id), and the merges
 * live in one open-addressing hash table of `Int32Array` slots keyed by the
 * pair of symbols, so that merging a word concatenates no strings and reads
 * no nested Maps.
 *
 * @module
 */

/** What is read of @huggingface/tokenizers' BPE model (0.2.x). */
export interface BpeModelParts {
  /** The merges in rank order, each a pair of strings. */
  readonly merges: readonly (readonly [string, string])[];
  /** Each string's id, added tokens included. */
  readonly tokens_to_ids: ReadonlyMap<string, number>;
  /** Each id's string, added tokens included. */
  readonly vocab: readonly (string | undefined)[];
}

/** Slot layout: left symbol, right symbol, rank, merged symbol. */
const STRIDE = 4;
const EMPTY = -1;
/** A merged symbol not looked up yet: most merges never apply to a given text, and looking up all of them would lengthen the load. */
const UNKNOWN = -2;
/** No rank: larger than any merge's. */
export const NO_RANK = 0x7fffffff;

/**
 * The merges of a BPE model keyed by symbol pairs.
 *
 * @example Merge a word
 * ```ts
 * import { BpeMerges } from "./bpe_merges.ts";
 * const vocab = ["a", "b", "ab"];
 * const merges = new BpeMerges({
 *   merges: [["a", "b"]],
 *   vocab,
 *   tokens_to_ids: new Map(vocab.map((s, i) => [s, i])),
 * });
 * const symbols = Int32Array.of(0, 1, 0);
 * console.assert(merges.merge(symbols, 3) === 2 && symbols[0] === 2);
 * ```
 */
export class BpeMerges {
  /** Each symbol's string. */
  get strings(): readonly string[] {
    return this.#strings;
  }
  readonly #strings: string[];
  readonly #symbols: ReadonlyMap<string, number>;
  readonly #extra: Map<string, number>;
  readonly #table: Int32Array;
  readonly #mask: number;
  /** Pair ranks and merged symbols of the word being merged, reused. */
  #ranks = new Int32Array(64);
  #merged = new Int32Array(64);

  /**
   * Builds the table from a BPE model's merges and vocabulary.
   *
   * @param model The model's merges, vocabulary and ids.
   */
  constructor(model: BpeModelParts) {
    const strings: string[] = [];
    // A string's symbol is its id when that id reads back as the same
    // string; any other string (an added token sharing an id, a merge's
    // string outside the vocabulary) gets a symbol past the vocabulary.
    const extra = new Map<string, number>();
    const ids = model.tokens_to_ids;
    const vocab = model.vocab;
    for (let id = 0; id < vocab.length; id++) strings.push(vocab[id] ?? "");
    const symbolOf = (text: string): number => {
      const id = ids.get(text);
      if (id !== undefined && vocab[id] === text) return id;
      let symbol = extra.get(text);
      if (symbol === undefined) {
        symbol = strings.length;
        strings.push(text);
        extra.set(text, symbol);
      }
      return symbol;
    };
    let slots = 16;
    while (slots < model.merges.length * 2) slots *= 2;
    const table = new Int32Array(slots * STRIDE).fill(EMPTY);
    const mask = slots - 1;
    for (let rank = 0; rank < model.merges.length; rank++) {
      const [left, right] = model.merges[rank]!;
      const a = symbolOf(left);
      const b = symbolOf(right);
      let slot = hash(a, b) & mask;
      for (;;) {
        const at = slot * STRIDE;
        const held = table[at]!;
        // A repeated pair keeps its last rank, as a Map built in order does.
        if (held === EMPTY || held === a && table[at + 1] === b) {
          table[at] = a;
          table[at + 1] = b;
          table[at + 2] = rank;
          table[at + 3] = UNKNOWN;
          break;
        }
        slot = (slot + 1) & mask;
      }
    }
    this.#strings = strings;
    this.#symbols = ids;
    this.#extra = extra;
    this.#table = table;
    this.#mask = mask;
  }

  /**
   * The symbol of a string.
   *
   * @param text A string.
   * @returns Its symbol, or -1 if no merge reads or makes it and it is not in the vocabulary.
   */
  symbolOf(text: string): number {
    const id = this.#symbols.get(text);
    if (id !== undefined && this.#strings[id] === text) return id;
    return this.#extra.get(text) ?? -1;
  }

  /**
   * The rank of merging two symbols.
   *
   * @param a The left symbol.
   * @param b The right symbol.
   * @returns The rank, or {@linkcode NO_RANK}.
   */
  rankOf(a: number, b: number): number {
    if (a < 0 || b < 0) return NO_RANK;
    const at = this.#slotOf(a, b);
    return at < 0 ? NO_RANK : this.#table[at + 2]!;
  }

  /**
   * BPE-merges a word's symbols in place: repeatedly the adjacent pair of
   * lowest rank, the leftmost among equals, which is the order of the
   * library's queue (score = rank + position / length) and of the Rust
   * crate. Each pair is looked up once, and again only for the two pairs a
   * merge changes.
   *
   * @param symbols The word's symbols, from index 0.
   * @param length How many symbols the word has.
   * @returns How many symbols are left.
   */
  merge(symbols: Int32Array, length: number): number {
    if (length < 2) return length;
    if (this.#ranks.length < length) {
      this.#ranks = new Int32Array(length * 2);
      this.#merged = new Int32Array(length * 2);
    }
    const ranks = this.#ranks;
    const merged = this.#merged;
    for (let i = 0; i < length - 1; i++) this.#pair(symbols, i, ranks, merged);
    let pairs = length - 1;
    for (;;) {
      let best = NO_RANK;
      let at = -1;
      for (let i = 0; i < pairs; i++) {
        if (ranks[i]! < best) {
          best = ranks[i]!;
          at = i;
        }
      }
      if (at < 0) return pairs + 1;
      symbols[at] = merged[at]!;
      for (let i = at + 1; i < pairs; i++) {
        symbols[i] = symbols[i + 1]!;
        ranks[i] = ranks[i + 1]!;
        merged[i] = merged[i + 1]!;
      }
      pairs--;
      if (at > 0) this.#pair(symbols, at - 1, ranks, merged);
      if (at < pairs) this.#pair(symbols, at, ranks, merged);
    }
  }

  /** Looks up the pair at `i` into the scratch arrays. */
  #pair(
    symbols: Int32Array,
    i: number,
    ranks: Int32Array,
    merged: Int32Array,
  ): void {
    const at = this.#slotOf(symbols[i]!, symbols[i + 1]!);
    if (at < 0) {
      ranks[i] = NO_RANK;
    } else {
      ranks[i] = this.#table[at + 2]!;
      let symbol = this.#table[at + 3]!;
      if (symbol === UNKNOWN) {
        symbol = this.#add(
          this.#strings[symbols[i]!]! + this.#strings[symbols[i + 1]!]!,
        );
        this.#table[at + 3] = symbol;
      }
      merged[i] = symbol;
    }
  }

  /** The symbol of a string, given one past the vocabulary if it has none. */
  #add(text: string): number {
    let symbol = this.symbolOf(text);
    if (symbol < 0) {
      symbol = this.#strings.length;
      this.#strings.push(text);
      this.#extra.set(text, symbol);
    }
    return symbol;
  }

  /** The table index of a pair's slot, or -1. */
  #slotOf(a: number, b: number): number {
    const table = this.#table;
    let slot = hash(a, b) & this.#mask;
    for (;;) {
      const at = slot * STRIDE;
      const held = table[at]!;
      if (held === a && table[at + 1] === b) return at;
      if (held === EMPTY) return -1;
      slot = (slot + 1) & this.#mask;
    }
  }
}

function hash(a: number, b: number): number {
  const h = Math.imul(a, 0x9e3779b1) ^ Math.imul(b + 0x7f4a7c15, 0x85ebca77);
  return (h ^ (h >>> 15)) >>> 0;
}
