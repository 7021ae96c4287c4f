/**
 * A BPE model's merges over token ids, as the Rust `tokenizers` crate keeps
 * them: each merge is a pair of vocabulary ids, its rank (its line in
 * `merges`), and the id of the string the two make. The tables live in
 * `Int32Array`s: an open-addressing hash table of ranks keyed by the pair,
 * and each rank's pair and merged id. Merging a word then concatenates no
 * strings and reads no nested Maps, and the tables stay small (4 bytes a
 * slot, 12 a merge) so that lookups mostly hit the CPU's caches.
 *
 * @module
 */

import { EngineError } from "../common/errors.ts";

const EMPTY = -1;
/** A merged id not looked up yet: most merges never apply to a given text, and looking up all of them would lengthen the load. */
const UNKNOWN = -2;
/** No rank: larger than any merge's. */
export const NO_RANK = 0x7fffffff;
/** Words of at most this many symbols merge by scanning their pairs; longer ones through a heap. */
const SCAN_UP_TO = 64;
/** Heap keys: the rank times this, plus the position (words up to 2^26 symbols). */
const POSITIONS = 2 ** 26;

/**
 * The merges of a BPE model keyed by pairs of ids.
 *
 * @example Merge a word
 * ```ts
 * import { BpeMerges } from "./bpe_merges.ts";
 * const vocab = new Map([["a", 0], ["b", 1], ["ab", 2]]);
 * const merges = BpeMerges.build(vocab, ["a", "b", "ab"], [["a", "b"]])!;
 * const symbols = Int32Array.of(0, 1, 0);
 * console.assert(merges.merge(symbols, 3) === 2 && symbols[0] === 2);
 * ```
 */
export class BpeMerges {
  /**
   * Each slot: -1, or a rank in the low `#rankBits` bits under the high
   * bits of its pair's hash, so that most probes of other pairs are told
   * apart without reading `#pairs`.
   */
  readonly #slots: Int32Array;
  /** By rank: left id, right id, merged id (or UNKNOWN). */
  readonly #pairs: Int32Array;
  readonly #vocab: ReadonlyMap<string, number>;
  readonly #strings: readonly string[];
  readonly #mask: number;
  readonly #rankBits: number;
  readonly #rankMask: number;
  readonly #tagShift: number;
  /** Pair ranks of the word being scanned, reused. */
  #ranks = new Int32Array(SCAN_UP_TO);
  /** The heap merge's buffers, reused. */
  #links = new Int32Array(0);
  #heap = new Float64Array(0);

  /**
   * The merges of a BPE model, or `undefined` when one reads a string
   * outside the vocabulary: the Rust crate refuses to load such a file
   * (`MergeTokenOutOfVocabulary`). The string a merge makes is looked up
   * on the merge's first use.
   *
   * @param vocab The model's vocabulary: each string's id.
   * @param strings Each id's string.
   * @param merges The merges in rank order.
   * @returns The tables, or `undefined`.
   */
  static build(
    vocab: ReadonlyMap<string, number>,
    strings: readonly string[],
    merges: readonly (readonly [string, string])[],
  ): BpeMerges | undefined {
    const pairs = new Int32Array(merges.length * 3);
    for (let rank = 0; rank < merges.length; rank++) {
      const [left, right] = merges[rank]!;
      const a = vocab.get(left);
      const b = vocab.get(right);
      if (a === undefined || b === undefined) return undefined;
      pairs[rank * 3] = a;
      pairs[rank * 3 + 1] = b;
      pairs[rank * 3 + 2] = UNKNOWN;
    }
    return new BpeMerges(pairs, vocab, strings);
  }

  private constructor(
    pairs: Int32Array,
    vocab: ReadonlyMap<string, number>,
    strings: readonly string[],
  ) {
    this.#vocab = vocab;
    this.#strings = strings;
    const count = pairs.length / 3;
    let slots = 16;
    while (slots < count * 2) slots *= 2;
    this.#slots = new Int32Array(slots).fill(EMPTY);
    this.#mask = slots - 1;
    this.#pairs = pairs;
    let rankBits = 1;
    while (2 ** rankBits < count) rankBits++;
    this.#rankBits = Math.min(rankBits, 31);
    this.#rankMask = this.#rankBits >= 31 ? 0x7fffffff : 2 ** rankBits - 1;
    // With no bits left for a tag, every candidate is checked in #pairs.
    this.#tagShift = this.#rankBits >= 31 ? -1 : this.#rankBits + 1;
    for (let rank = 0; rank < count; rank++) {
      this.#insert(pairs[rank * 3]!, pairs[rank * 3 + 1]!, rank);
    }
  }

  /**
   * BPE-merges a word's ids in place: repeatedly the adjacent pair of
   * lowest rank, the leftmost among equals, as the Rust crate's queue does
   * (ordered by rank, then position). A word of up to 64 symbols scans its
   * pairs' ranks, looking each pair up once and again only for the two a
   * merge changes; a longer one goes through a heap.
   *
   * @param symbols The word's ids, from index 0.
   * @param length How many ids the word has.
   * @returns How many ids are left.
   */
  merge(symbols: Int32Array, length: number): number {
    if (length < 2) return length;
    if (length > SCAN_UP_TO) return this.#mergeByHeap(symbols, length);
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

  /**
   * The Rust crate's `merge_all`: a min-heap of (rank, position) over a
   * linked list of symbols; an entry whose pair changed since it was pushed
   * is skipped when it comes out.
   */
  #mergeByHeap(symbols: Int32Array, length: number): number {
    if (length >= POSITIONS) throw new RangeError("word too long to merge");
    if (this.#links.length < length * 2) {
      this.#links = new Int32Array(length * 2);
    }
    // prev at [i], next at [length + i]; a merged-away symbol is -1.
    const links = this.#links;
    let heap = this.#heap;
    let size = 0;
    const push = (key: number): void => {
      if (size === heap.length) {
        const grown = new Float64Array(Math.max(64, size * 2));
        grown.set(heap);
        heap = grown;
      }
      let i = size++;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (heap[parent]! <= key) break;
        heap[i] = heap[parent]!;
        i = parent;
      }
      heap[i] = key;
    };
    const pop = (): number => {
      const top = heap[0]!;
      const last = heap[--size]!;
      let i = 0;
      for (;;) {
        let child = 2 * i + 1;
        if (child >= size) break;
        if (child + 1 < size && heap[child + 1]! < heap[child]!) child++;
        if (heap[child]! >= last) break;
        heap[i] = heap[child]!;
        i = child;
      }
      heap[i] = last;
      return top;
    };
    for (let i = 0; i < length; i++) {
      links[i] = i - 1;
      links[length + i] = i + 1 < length ? i + 1 : -1;
      if (i + 1 < length) {
        const rank = this.#rank(symbols[i]!, symbols[i + 1]!);
        if (rank !== NO_RANK) push(rank * POSITIONS + i);
      }
    }
    while (size > 0) {
      const key = pop();
      const at = key % POSITIONS;
      const rank = (key - at) / POSITIONS;
      const next = links[length + at]!;
      if (symbols[at]! < 0 || next < 0) continue;
      if (this.#rank(symbols[at]!, symbols[next]!) !== rank) continue;
      symbols[at] = this.#merged(rank);
      symbols[next] = -1;
      const after = links[length + next]!;
      links[length + at] = after;
      if (after >= 0) links[after] = at;
      const before = links[at]!;
      if (before >= 0) {
        const left = this.#rank(symbols[before]!, symbols[at]!);
        if (left !== NO_RANK) push(left * POSITIONS + before);
      }
      if (after >= 0) {
        const right = this.#rank(symbols[at]!, symbols[after]!);
        if (right !== NO_RANK) push(right * POSITIONS + at);
      }
    }
    this.#heap = heap;
    let left = 0;
    for (let i = 0; i >= 0; i = links[length + i]!) {
      symbols[left++] = symbols[i]!;
    }
    return left;
  }

  /** The id a merge makes, looked up on its first use. */
  #merged(rank: number): number {
    const at = rank * 3 + 2;
    let id = this.#pairs[at]!;
    if (id === UNKNOWN) {
      const pairs = this.#pairs;
      const strings = this.#strings;
      const made = this.#vocab.get(
        strings[pairs[at - 2]!]! + strings[pairs[at - 1]!]!,
      );
      if (made === undefined) {
        throw new EngineError(
          "Cannot tokenize with this tokenizer.json: a merge makes a string outside its vocabulary (the Rust tokenizers crate refuses to load it)",
        );
      }
      id = made;
      pairs[at] = id;
    }
    return id;
  }

  #insert(a: number, b: number, rank: number): void {
    const h = hash(a, b);
    const held = this.#tagShift < 0
      ? rank
      : (h >>> this.#tagShift << this.#rankBits | rank);
    const slots = this.#slots;
    for (let slot = h & this.#mask;; slot = (slot + 1) & this.#mask) {
      const other = slots[slot]!;
      // A repeated pair keeps its last rank, as the Rust crate's map does.
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
