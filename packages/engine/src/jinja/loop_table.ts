// What a loop's run keeps of each item for the next run (see loop_runs.ts),
// in arrays read in order: a reuse without checks reads only these, never
// the item's entry. A run that holds the previous one whole, at the same
// indices, takes the previous run's table over and writes only from the
// first item it changed: a grown conversation's loop costs its new items,
// not a copy of every earlier one.
import type { Entry } from "./memo.ts";

/** Items summed up together: a block whose items read no dirty root is reused at once. */
export const BLOCK = 64;
/** A block whose outputs are all empty. */
export const EMPTY = 0;
/** A block whose outputs are all filled. */
export const FILLED = 1;
/** A block with empty and filled outputs. */
export const MIXED = 2;

/**
 * Per item: the entry used, its output, the bits of its roots, whether it
 * wrote; per block, its roots and whether its outputs are empty. Whether an
 * output is empty is kept apart, so that a block is reused without reading
 * its strings (out of the processor's caches at a million tokens).
 */
export class ItemTable {
  /** How many items. */
  length = 0;
  /** The entry each item reused or recorded; undefined where none. */
  readonly entries: (Entry | undefined)[] = [];
  /** Each item's output. */
  readonly outputs: string[] = [];
  /** The bits of every root it read (`-1`: no entry, or a root without a bit). Longer than `length`: room to grow. */
  roots: Int32Array;
  /** 1 where it wrote a namespace (or may have). Longer than `length`, as `roots`. */
  writes: Uint8Array;
  /** 1 where its output is not empty. Longer than `length`, as `roots`. */
  filled: Uint8Array;
  /** After each item that wrote: the key roots. */
  readonly after: (ReadonlyMap<string, unknown> | undefined)[] = [];
  /**
   * By block of {@linkcode BLOCK} items: the bits of every root its items
   * read (`-1` as for one item), or `-1` too where one wrote. Set by
   * {@linkcode summarize}.
   */
  blocks: Int32Array = new Int32Array(0);
  /** By block: {@linkcode EMPTY}, {@linkcode FILLED} or {@linkcode MIXED}. */
  fills: Uint8Array = new Uint8Array(0);

  /** @param capacity The items it holds before growing. */
  constructor(capacity: number) {
    this.roots = new Int32Array(capacity);
    this.writes = new Uint8Array(capacity);
    this.filled = new Uint8Array(capacity);
  }

  /** Sets item `i` (at most `length`: items come in order). */
  set(
    i: number,
    entry: Entry | undefined,
    output: string,
    roots: number,
    wrote: number,
    after: ReadonlyMap<string, unknown> | undefined,
  ): void {
    if (i >= this.roots.length) this.#grow(i + 1);
    this.entries[i] = entry;
    this.outputs[i] = output;
    this.roots[i] = roots;
    this.writes[i] = wrote;
    this.filled[i] = output === "" ? 0 : 1;
    this.after[i] = after;
    if (i >= this.length) this.length = i + 1;
  }

  /**
   * Sets items `at` to `at + count` (from `length` on: items come in
   * order) to `source`'s from `from`, none of which wrote.
   */
  copy(source: ItemTable, from: number, count: number, at: number): void {
    if (at + count > this.roots.length) this.#grow(at + count);
    const { entries, outputs } = this;
    for (let k = 0; k < count; k++) {
      entries[at + k] = source.entries[from + k];
      outputs[at + k] = source.outputs[from + k]!;
    }
    this.roots.set(source.roots.subarray(from, from + count), at);
    this.writes.fill(0, at, at + count);
    this.filled.set(source.filled.subarray(from, from + count), at);
    if (at + count > this.length) this.length = at + count;
  }

  /** Keeps the first `n` items, then `tail`'s. */
  splice(n: number, tail: ItemTable): void {
    const length = n + tail.length;
    if (length > this.roots.length) this.#grow(length);
    this.entries.length = n;
    this.outputs.length = n;
    this.after.length = n;
    for (let k = 0; k < tail.length; k++) {
      this.entries.push(tail.entries[k]);
      this.outputs.push(tail.outputs[k]!);
      this.after.push(tail.after[k]);
    }
    this.roots.set(tail.roots.subarray(0, tail.length), n);
    this.writes.set(tail.writes.subarray(0, tail.length), n);
    this.filled.set(tail.filled.subarray(0, tail.length), n);
    this.length = length;
  }

  /** Sums up the blocks from the one holding item `from` on; those before are as they were. */
  summarize(from: number): void {
    const count = Math.ceil(this.length / BLOCK);
    if (count > this.blocks.length) {
      const capacity = count + (count >> 2) + 1;
      const blocks = new Int32Array(capacity);
      blocks.set(this.blocks);
      this.blocks = blocks;
      const fills = new Uint8Array(capacity);
      fills.set(this.fills);
      this.fills = fills;
    }
    const { roots, writes, filled } = this;
    for (let b = Math.floor(from / BLOCK); b < count; b++) {
      let union = 0;
      let some = 0;
      const start = b * BLOCK;
      const end = Math.min(this.length, start + BLOCK);
      for (let k = start; k < end; k++) {
        union = union === -1 || roots[k] === -1 || writes[k] === 1
          ? -1
          : union | roots[k]!;
        some += filled[k]!;
      }
      this.blocks[b] = union;
      this.fills[b] = some === 0
        ? EMPTY
        : some === end - start
        ? FILLED
        : MIXED;
    }
  }

  /** Room for at least `n` items, and a quarter more. */
  #grow(n: number): void {
    const capacity = n + (n >> 2) + BLOCK;
    const roots = new Int32Array(capacity);
    roots.set(this.roots.subarray(0, this.length));
    this.roots = roots;
    const writes = new Uint8Array(capacity);
    writes.set(this.writes.subarray(0, this.length));
    this.writes = writes;
    const filled = new Uint8Array(capacity);
    filled.set(this.filled.subarray(0, this.length));
    this.filled = filled;
  }
}
