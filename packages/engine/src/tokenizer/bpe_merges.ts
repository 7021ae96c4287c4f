/**
 * A BPE model's merges over integer symbols: every string that a merge reads
 * or makes gets a symbol (a vocabulary string its own id), and the merges
 * live in `Int32Array`s: an open-addressing hash table of ranks keyed by the
 * pair of symbols, and each rank's pair and merged symbol. Merging a word
 * then concatenates no strings and reads no nested Maps, and the tables stay
 * small (4 bytes a slot, 12 a merge) so that lookups mostly hit the CPU's
 * caches.
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
  readonly #extra = new Map<string, number>();
  /**
   * Each slot: -1, or a rank in the low `#rankBits` bits under the high
   * bits of its pair's hash, so that most probes of other pairs are told
   * apart without reading `#pairs`.
   */
  readonly #slots: Int32Array;
  /** By rank: left symbol, right symbol, merged symbol (or UNKNOWN). */
  readonly #pairs: Int32Array;
  readonly #mask: number;
  readonly #rankBits: number;
  readonly #rankMask: number;
  readonly #tagShift: number;
  /** Pair ranks of the word being merged, reused. */
  #ranks = new Int32Array(64);

  /**
   * Builds the tables from a BPE model's merges and vocabulary.
   *
   * @param model The model's merges, vocabulary and ids.
   */
  constructor(model: BpeModelParts) {
    const count = model.merges.length;
    const strings: string[] = [];
    for (let id = 0; id < model.vocab.length; id++) {
      strings.push(model.vocab[id] ?? "");
    }
    this.#strings = strings;
    this.#symbols = model.tokens_to_ids;
    let slots = 16;
    while (slots < count * 2) slots *= 2;
    this.#slots = new Int32Array(slots).fill(EMPTY);
    this.#mask = slots - 1;
    this.#pairs = new Int32Array(count * 3);
    let rankBits = 1;
    while (2 ** rankBits < count) rankBits++;
    this.#rankBits = Math.min(rankBits, 31);
    this.#rankMask = this.#rankBits >= 31 ? 0x7fffffff : 2 ** rankBits - 1;
    // With no bits left for a tag, every candidate is checked in #pairs.
    this.#tagShift = this.#rankBits >= 31 ? -1 : this.#rankBits + 1;
    for (let rank = 0; rank < count; rank++) {
      const [left, right] = model.merges[rank]!;
      this.#insert(this.#add(left), this.#add(right), rank);
    }
  }

  /**
   * The symbol of a string.
   *
   * @param text A string.
   * @returns Its symbol, or -1 if no merge reads or makes it and it is not in the vocabulary.
   */
  symbolOf(text: string): number {
    // A string's symbol is its id when that id reads back as the same
    // string; any other string (an added token sharing an id, a merge's
    // string outside the vocabulary) has a symbol past the vocabulary.
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
    return a < 0 || b < 0 ? NO_RANK : this.#rank(a, b);
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
    if (this.#ranks.length < length) this.#ranks = new Int32Array(length * 2);
    const ranks = this.#ranks;
    for (let i = 0; i < length - 1; i++) {
      ranks[i] = this.#rank(symbols[i]!, symbols[i + 1]!);
    }
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
      symbols[at] = this.#merged(best);
      for (let i = at + 1; i < pairs; i++) {
        symbols[i] = symbols[i + 1]!;
        ranks[i] = ranks[i + 1]!;
      }
      pairs--;
      if (at > 0) ranks[at - 1] = this.#rank(symbols[at - 1]!, symbols[at]!);
      if (at < pairs) ranks[at] = this.#rank(symbols[at]!, symbols[at + 1]!);
    }
  }

  /** The symbol a merge makes, looked up on its first use. */
  #merged(rank: number): number {
    const at = rank * 3;
    let symbol = this.#pairs[at + 2]!;
    if (symbol === UNKNOWN) {
      const strings = this.#strings;
      symbol = this.#add(
        strings[this.#pairs[at]!]! + strings[this.#pairs[at + 1]!]!,
      );
      this.#pairs[at + 2] = symbol;
    }
    return symbol;
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

  #insert(a: number, b: number, rank: number): void {
    const h = hash(a, b);
    const held = this.#tagShift < 0
      ? rank
      : (h >>> this.#tagShift << this.#rankBits | rank);
    const slots = this.#slots;
    const pairs = this.#pairs;
    pairs[rank * 3] = a;
    pairs[rank * 3 + 1] = b;
    pairs[rank * 3 + 2] = UNKNOWN;
    for (let slot = h & this.#mask;; slot = (slot + 1) & this.#mask) {
      const other = slots[slot]!;
      // A repeated pair keeps its last rank, as a Map built in order does.
      if (other === EMPTY || this.#holds(other, a, b)) {
        slots[slot] = held;
        return;
      }
    }
  }

  /** Whether a slot's rank is the pair's. */
  #holds(held: number, a: number, b: number): boolean {
    const at = (held & this.#rankMask) * 3;
    return this.#pairs[at] === a && this.#pairs[at + 1] === b;
  }

  /** The rank of a pair, or NO_RANK. */
  #rank(a: number, b: number): number {
    const h = hash(a, b);
    const slots = this.#slots;
    const pairs = this.#pairs;
    const rankMask = this.#rankMask;
    const tag = this.#tagShift < 0 ? 0 : h >>> this.#tagShift;
    for (let slot = h & this.#mask;; slot = (slot + 1) & this.#mask) {
      const held = slots[slot]!;
      if (held === EMPTY) return NO_RANK;
      if (held >>> this.#rankBits === tag) {
        const rank = held & rankMask;
        if (pairs[rank * 3] === a && pairs[rank * 3 + 1] === b) return rank;
      }
    }
  }
}

function hash(a: number, b: number): number {
  const h = Math.imul(a, 0x9e3779b1) ^ Math.imul(b + 0x7f4a7c15, 0x85ebca77);
  return (h ^ (h >>> 15)) >>> 0;
}
