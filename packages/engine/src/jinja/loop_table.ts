// What a loop's run keeps of each item for the next run (see loop_runs.ts),
// in arrays read in order: a reuse without checks reads only these, never
// the item's entry. Item `i` is kept in slot `front + i`, with room before
// the first and after the last: a run that holds the previous one whole
// takes its table over, the items both hold staying in their slots (the new
// items come after them over `messages`, before them over
// `messages[::-1]`), and writes only the items it recorded. A grown
// conversation's loop costs its new items, not a copy of every earlier one.
import type { Entry } from "./memo.ts";

/** Slots summed up together: a block whose items read no dirty root is reused at once. */
export const BLOCK = 64;
/** A block whose outputs are all empty. */
export const EMPTY = 0;
/** A block whose outputs are all filled. */
export const FILLED = 1;
/** A block with empty and filled outputs. */
export const MIXED = 2;

/**
 * Per item: the entry used, its output, the bits of its roots, whether it
 * wrote; per block of slots, its roots and whether its outputs are empty.
 * Whether an output is empty is kept apart, so that a block is reused
 * without reading its strings (out of the processor's caches at a million
 * tokens).
 */
export class ItemTable {
  /** The slot of item 0. */
  front = 0;
  /** How many items. */
  length = 0;
  /** The entry each item reused or recorded; undefined where none. */
  entries: (Entry | undefined)[] = [];
  /** Each item's output. */
  outputs: string[] = [];
  /** After each item that wrote: the key roots. */
  after: (ReadonlyMap<string, unknown> | undefined)[] = [];
  /** The bits of every root it read (`-1`: no entry, or a root without a bit). */
  roots: Int32Array = new Int32Array(0);
  /** 1 where it wrote a namespace (or may have). */
  writes: Uint8Array = new Uint8Array(0);
  /** 1 where its output is not empty. */
  filled: Uint8Array = new Uint8Array(0);
  /**
   * By block of {@linkcode BLOCK} slots: the bits of every root its items
   * read (`-1` as for one item), or `-1` too where one wrote. Set by
   * {@linkcode summarize}.
   */
  blocks: Int32Array = new Int32Array(0);
  /** By block: {@linkcode EMPTY}, {@linkcode FILLED} or {@linkcode MIXED}. */
  fills: Uint8Array = new Uint8Array(0);

  /** A table for `length` items, to be set in order. */
  constructor(length: number) {
    this.#move(length);
    this.length = length;
  }

  /** How many slots. */
  get capacity(): number {
    return this.roots.length;
  }

  /** Sets the item in `slot`. */
  set(
    slot: number,
    entry: Entry | undefined,
    output: string,
    roots: number,
    wrote: number,
    after: ReadonlyMap<string, unknown> | undefined,
  ): void {
    this.entries[slot] = entry;
    this.outputs[slot] = output;
    this.after[slot] = after;
    this.roots[slot] = roots;
    this.writes[slot] = wrote;
    this.filled[slot] = output === "" ? 0 : 1;
  }

  /** Sets `count` items from slot `at` to `source`'s from slot `from`, none of which wrote. */
  copy(source: ItemTable, from: number, count: number, at: number): void {
    const { entries, outputs } = this;
    for (let k = 0; k < count; k++) {
      entries[at + k] = source.entries[from + k];
      outputs[at + k] = source.outputs[from + k]!;
    }
    this.roots.set(source.roots.subarray(from, from + count), at);
    this.writes.fill(0, at, at + count);
    this.filled.set(source.filled.subarray(from, from + count), at);
  }

  /**
   * Holds `length` items from now on, its item `offset` the first one
   * held so far: the items held stay in their slots. Items move only when
   * the slots run out before or after them (and every block is summed up
   * again).
   *
   * @returns Whether the items moved.
   */
  hold(offset: number, length: number): boolean {
    const front = this.front - offset;
    if (front >= 0 && front + length <= this.capacity) {
      this.front = front;
      this.length = length;
      return false;
    }
    this.#move(length, offset);
    this.length = length;
    return true;
  }

  /**
   * Sums up the blocks of the slots from `from` to `to` (not included), the
   * items' slots only.
   */
  summarize(from: number, to: number): void {
    const { roots, writes, filled } = this;
    const first = this.front;
    const last = this.front + this.length;
    for (let b = Math.floor(from / BLOCK); b * BLOCK < to; b++) {
      let union = 0;
      let some = 0;
      const start = Math.max(first, b * BLOCK);
      const end = Math.min(last, (b + 1) * BLOCK);
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

  /**
   * New slots for `length` items, a quarter more on each side; the items
   * held so far go to the slots from `offset` on.
   */
  #move(length: number, offset = 0): void {
    const room = (length >> 2) + BLOCK;
    const capacity = length + 2 * room;
    const at = room + offset;
    const from = this.front;
    const held = this.length;
    const entries: (Entry | undefined)[] = [];
    const outputs: string[] = [];
    const after: (ReadonlyMap<string, unknown> | undefined)[] = [];
    // Filled in order, so that the arrays hold no holes.
    for (let slot = 0; slot < capacity; slot++) {
      const i = slot - at;
      const inside = i >= 0 && i < held;
      entries.push(inside ? this.entries[from + i] : undefined);
      outputs.push(inside ? this.outputs[from + i]! : "");
      after.push(inside ? this.after[from + i] : undefined);
    }
    const roots = new Int32Array(capacity);
    roots.set(this.roots.subarray(from, from + held), at);
    const writes = new Uint8Array(capacity);
    writes.set(this.writes.subarray(from, from + held), at);
    const filled = new Uint8Array(capacity);
    filled.set(this.filled.subarray(from, from + held), at);
    this.entries = entries;
    this.outputs = outputs;
    this.after = after;
    this.roots = roots;
    this.writes = writes;
    this.filled = filled;
    const blocks = Math.ceil(capacity / BLOCK);
    this.blocks = new Int32Array(blocks);
    this.fills = new Uint8Array(blocks);
    this.front = room;
  }
}
