// Reuse of a loop's items from its previous run without checking them one
// by one: the template's state at the items a render shares with the
// previous render.
//
// A conversation that grew renders its loops over the previous render's
// items again: the same item objects, in the same order, after the new
// ones (a loop over `messages[::-1]`) or before them (over `messages`).
// memo.ts reuses an item's output once every value its body read gives the
// same value again, which costs every item a check. Here each value an
// entry read is traced to its roots, the names it reads other than the
// item itself:
// - `=name`: a name of the enclosing scopes, used whole. It holds one value
//   for the whole loop (a body cannot rebind it); clean when alike to the
//   previous run's;
// - `.name.key`: a namespace's (or a mapping's) key. Namespace keys change
//   only after an item that writes; they are compared again with what the
//   previous run held after the same item;
// - `?name`: that a name holds a namespace;
// - `[name`: a list read only at `loop.index0 + k`: clean at the items
//   whose reads stay within what both runs' lists share;
// - `>root`: `=name` or `.name.key` read only to be compared with
//   `loop.index0 + k`: clean at the items outside the range its two values
//   span;
// - `:name`: the type of a name, where it alone makes an unchecked read
//   (memo.ts `dead`) unable to raise;
// - `loop.field`, `loop`: clean as the runs align (`loop.index0` is the
//   same when the shared items start both runs; `loop.revindex` when they
//   end both).
// An item lines up when it is the previous run's item at the same place
// (the shared items first, or last), with the same neighbours. One whose
// previous entry reads only roots clean there reads the same values again:
// its output and namespace writes are reused as they are, and a block of
// 64 such items at once. Where a root is dirty, the entry's reads of it are
// checked (still without the item's own scope); where that fails, memo.ts
// checks or runs the item.
//
// Items, and the parts of a render, are told the same with `Object.is`:
// `===` reads each object or string (its type) before it compares, and at
// a million tokens these are most often out of the processor's caches.
import type { LoopFields } from "./loop_fields.ts";
import { BLOCK, FILLED, ItemTable, MIXED } from "./loop_table.ts";
import {
  integerOf,
  isKeyRoot,
  LIST_REACH,
  LoopRoots,
  type Mask,
  same,
  sharedItems,
  valueOf,
} from "./loop_roots.ts";
import {
  type Entry,
  type LoopScopes,
  memoStats,
  raises,
  readAgain,
  replayKeys,
} from "./memo.ts";
import type { Node, Scope } from "./scope.ts";
import type { Value } from "./values.ts";

/** One run of a loop: its items, what each used, the roots it saw. */
interface Run {
  readonly items: readonly Value[];
  /** What each item used, the roots it read; by block too. */
  readonly table: ItemTable;
  /** The value roots at the loop's start. */
  readonly start: ReadonlyMap<string, unknown>;
  /**
   * Runs of the loop lined up with this one and not finished: a loop within
   * an item of the same loop (a macro calling itself) runs while the outer
   * one does. Only a run that is the one reader as it starts takes the
   * table over (one that broke off stays a reader).
   */
  readers: number;
}

/** An item a run recorded, written over the table it takes over. */
interface Recorded {
  readonly i: number;
  readonly entry: Entry | undefined;
  readonly output: string;
  readonly roots: number;
  readonly wrote: number;
  readonly after: ReadonlyMap<string, unknown> | undefined;
}

/** Runs kept per loop: a few conversations interleaved still align. */
const RECENT_RUNS = 4;
/** Loop fields that differ when the shared items start both runs but the lengths differ. */
const LENGTH_FIELDS = ["length", "revindex", "revindex0"];
/** Loop fields that differ when the shared items end both runs, after new ones. */
const INDEX_FIELDS = ["index", "index0", "length", "cycle"];

/** A loop's roots, and its recent runs. */
class LoopHistory {
  readonly roots = new LoopRoots();
  runs: Run[] = [];
}

const histories = new WeakMap<Node, LoopHistory>();

/**
 * How the two runs line up: item `i` of this run against item `i - offset`
 * of the previous one. Where they hold the same item, with the same items
 * (or none) before and after it, it may be reused.
 */
interface Alignment {
  readonly run: Run;
  /** This run's index of the previous run's first item. */
  readonly offset: number;
  /** How many items line up. */
  readonly same: number;
  /** Loop fields that differ at every item. */
  readonly fields: readonly string[];
}

/**
 * The recent run and offset under which the most items line up: the
 * previous items first (a loop over `messages`, offset 0) or last (over
 * `messages[::-1]`, the offset the number of new items); items edited in
 * between just do not line up.
 */
function align(
  runs: readonly Run[],
  items: readonly Value[],
): Alignment | null {
  let best: Alignment | null = null;
  let most = 0;
  const n = items.length;
  for (const run of runs) {
    const old = run.items;
    const m = old.length;
    // The likelier offset first (the same last items: new ones before
    // them), so that a run lining up whole is counted once.
    const offsets = n === m
      ? [0]
      : Object.is(items[n - 1], old[m - 1])
      ? [n - m, 0]
      : [0, n - m];
    for (const offset of offsets) {
      const from = Math.max(0, offset);
      const end = Math.min(n, m + offset);
      if (end - from <= most) continue;
      // Another conversation shares its first item (a system message) at
      // most, first in `messages`, last in `messages[::-1]`: a run that
      // lines up has two neighbouring items lined up at one end.
      const lines = (i: number) => Object.is(items[i], old[i - offset]);
      if (
        end - from < 2 ? !lines(from) : !(lines(from) && lines(from + 1)) &&
          !(lines(end - 2) && lines(end - 1))
      ) continue;
      let same = 0;
      for (let i = from; i < end; i++) {
        if (Object.is(items[i], old[i - offset])) same++;
      }
      if (same > most) {
        most = same;
        best = {
          run,
          offset,
          same,
          fields: offset !== 0 ? INDEX_FIELDS : n === m ? [] : LENGTH_FIELDS,
        };
      }
      // All of the run lines up: no other offset does better.
      if (same === m) break;
    }
  }
  return best;
}

/** A dirty root clean at some items only: within `[from, to)`, or outside it. */
interface Window {
  readonly bit: number;
  /** Whether its root is a namespace key: compared again after a write. */
  readonly key: boolean;
  readonly from: number;
  readonly to: number;
  /** Whether the root is dirty inside the range (else, outside it). */
  readonly inside: boolean;
}

/**
 * One run of a loop as it happens: which items may be reused without a
 * check of their own, and what this run records for the next.
 */
export class LoopRun {
  readonly #history: LoopHistory;
  readonly #items: readonly Value[];
  readonly #outer: Scope;
  readonly #itemName: string;
  /** A scope holding only the loop and the item, where dirty reads are checked. */
  readonly #probe: LoopScopes;
  /** The loop's fields, set to an item's index while its reads are checked. */
  readonly #loop: LoopFields;
  readonly #start = new Map<string, unknown>();
  readonly #alignment: Alignment | null;
  /**
   * This run's own table; null where it takes the previous run's table over
   * (it holds every previous item): the items it records are then kept in
   * `#journal`, and written over that table when it finishes (a render that
   * raises leaves the table as it was); the items it reuses as they were
   * stay in their slots.
   */
  readonly #fresh: ItemTable | null;
  /** Taking over: the items recorded, in order. */
  readonly #journal: Recorded[] = [];
  /** Roots with a bit when the run started; later ones count as dirty. */
  readonly #known: number;
  /** Roots that may differ from the previous run's at the current item. */
  #dirty = 0;
  /** `#dirty` and the roots the loop took up after this run started, not followed. */
  #unclean = -1;
  /** Dirty roots clean outside a range of items. */
  #windows: Window[] = [];
  /** Whether `#dirty` was computed (at the first shared item). */
  #started = false;
  /** The previous run's key roots before the current item. */
  #previous: ReadonlyMap<string, unknown> = new Map();
  /** By the bit of a dirty `[list` root, at the same index in both runs: the lists' items now and before. */
  readonly #lists = new Map<
    number,
    readonly [readonly Value[], readonly Value[]]
  >();

  /**
   * @param node The `for` node.
   * @param items The items of this run.
   * @param outer The scope enclosing the loop's own.
   * @param itemName The loop variable.
   * @param probe Where a read is checked: a scope of its own under
   * `outer`, holding the loop (at the item's index) and, once bound, the item.
   * @param loop The loop's fields, which the probe scope's `loop` holds.
   */
  constructor(
    node: Node,
    items: readonly Value[],
    outer: Scope,
    itemName: string,
    probe: LoopScopes,
    loop: LoopFields,
  ) {
    let history = histories.get(node);
    if (history === undefined) histories.set(node, history = new LoopHistory());
    this.#history = history;
    this.#items = items;
    this.#outer = outer;
    this.#itemName = itemName;
    this.#probe = probe;
    this.#loop = loop;
    for (const root of history.roots.bits.keys()) {
      if (!root.startsWith("loop")) this.#start.set(root, valueOf(root, outer));
    }
    this.#known = history.roots.bits.size;
    const alignment = this.#alignment = align(history.runs, items);
    if (alignment !== null) alignment.run.readers++;
    const whole = alignment !== null && alignment.run.readers === 1 &&
      alignment.same === alignment.run.items.length;
    this.#fresh = whole ? null : new ItemTable(items.length);
  }

  /**
   * Reuses the items from `i` on, while each is the previous run's item
   * with the same neighbours and its previous entry holds without a check
   * of its own: every root it read is clean there, or its reads of dirty
   * roots give alike values again (checked in the probe scope, the loop at
   * the item). Their namespace writes are made again, their outputs (but
   * empty ones) pushed to `out`, and they count as done; the item after
   * them is checked or run, then {@linkcode done}.
   *
   * @returns How many items were reused.
   */
  reuseFrom(i: number, out: string[]): number {
    const alignment = this.#alignment;
    if (alignment === null) return 0;
    const run = alignment.run;
    const old = run.items;
    const items = this.#items;
    const m = old.length;
    const n = items.length;
    let j = i - alignment.offset;
    if (j < 0 || j >= m) return 0;
    if (!this.#started) this.#begin(alignment, j);
    // The item before: the same, or none in both runs.
    if (!(j === 0 ? i === 0 : i > 0 && Object.is(items[i - 1], old[j - 1]))) {
      return 0;
    }
    const start = i;
    // The roots dirty here, and the next item where a window opens or
    // closes (or a write changes them).
    let dirty = this.#dirtyAt(i);
    let until = this.#windowChange(i);
    // Read once: an item reused costs a few reads of arrays in order.
    const table = run.table;
    const { roots: oldRoots, writes: oldWrites, filled, outputs, entries } =
      table;
    // The previous run's item `j` is in slot `f + j`; this run's own table's
    // item `i` in slot `g + i`.
    const f = table.front;
    const fresh = this.#fresh;
    const g = fresh?.front ?? 0;
    // Every item of the previous run lines up: inside it, each has the same
    // neighbours, and a whole block reading no dirty root is reused at once.
    const whole = alignment.same === m;
    for (; j < m && i < n && Object.is(items[i], old[j]); i++, j++) {
      if (whole && ((f + j) & (BLOCK - 1)) === 0 && j + BLOCK < m) {
        const b = (f + j) / BLOCK;
        const block = table.blocks[b]!;
        if (block !== -1 && (block & this.#dirtyOver(i, i + BLOCK)) === 0) {
          // Empty outputs are not pushed, and not read.
          const fill = table.fills[b];
          if (fill === FILLED) {
            for (let k = f + j; k < f + j + BLOCK; k++) out.push(outputs[k]!);
          } else if (fill === MIXED) {
            for (let k = f + j; k < f + j + BLOCK; k++) {
              if (filled[k] === 1) out.push(outputs[k]!);
            }
          }
          fresh?.copy(table, f + j, BLOCK, g + i);
          i += BLOCK - 1;
          j += BLOCK - 1;
          continue;
        }
      }
      // The item after: the same, or none in both runs.
      if (
        j === m - 1
          ? i !== n - 1
          : i === n - 1 || !Object.is(items[i + 1], old[j + 1])
      ) {
        break;
      }
      const roots = oldRoots[f + j]!;
      if (i >= until) {
        dirty = this.#dirtyAt(i);
        until = this.#windowChange(i);
      }
      const entry = entries[f + j];
      if (roots === -1 || (roots & dirty) !== 0) {
        this.#loop.at = i;
        if (entry === undefined || !this.#holds(entry, i, dirty)) break;
      }
      const output = outputs[f + j]!;
      if (filled[f + j] === 1) out.push(output);
      if (oldWrites[f + j] === 1) {
        replayKeys(entry!, this.#outer);
        this.#record(i, entry, output, roots, 1);
        // Both runs wrote the same: the key roots compare again.
        this.#follow(j, true);
        until = i + 1;
        continue;
      }
      fresh?.set(g + i, entry, output, roots, 0, undefined);
    }
    memoStats.hits += i - start;
    memoStats.skips += i - start;
    return i - start;
  }

  /**
   * Records what item `i` used, after it was checked or run: the entry
   * reused or recorded, or undefined (an item run without one, whose
   * writes are not known); and its output.
   */
  done(i: number, entry: Entry | undefined, output: string): void {
    const wrote = entry === undefined || entry.keyWrites.length > 0;
    const roots = entry === undefined ? -1 : this.#maskOf(entry).union;
    this.#record(i, entry, output, roots, wrote ? 1 : 0);
    const alignment = this.#alignment;
    if (alignment === null || !this.#started) return;
    const j = i - alignment.offset;
    if (j >= 0 && j < alignment.run.items.length) this.#follow(j, wrote);
  }

  /** Keeps this run for the next: only a run that went through every item. */
  finish(): void {
    const history = this.#history;
    // A run this one holds most of is kept no more; another conversation's,
    // sharing a few items, stays.
    const alignment = this.#alignment;
    const replaced = alignment !== null &&
        alignment.same * 2 > alignment.run.items.length
      ? alignment.run
      : undefined;
    if (alignment !== null) alignment.run.readers--;
    let table = this.#fresh;
    if (table !== null) {
      table.summarize(table.front, table.front + table.length);
    } else {
      // No run that started before this one reads the table (it was the
      // only reader then); those since ran within its items, and are done.
      table = alignment!.run.table;
      const moved = table.hold(alignment!.offset, this.#items.length);
      for (const { i, entry, output, roots, wrote, after } of this.#journal) {
        table.set(table.front + i, entry, output, roots, wrote, after);
      }
      if (moved) table.summarize(table.front, table.front + table.length);
      else {
        // Only the blocks of the items recorded changed.
        let summed = -1;
        for (const { i } of this.#journal) {
          const block = Math.floor((table.front + i) / BLOCK);
          if (block === summed) continue;
          table.summarize(block * BLOCK, (block + 1) * BLOCK);
          summed = block;
        }
      }
    }
    history.runs = [
      { items: this.#items, table, start: this.#start, readers: 0 },
      ...history.runs.filter((run) => run !== replaced),
    ].slice(0, RECENT_RUNS);
  }

  #maskOf(entry: Entry): Mask {
    return this.#history.roots.maskOf(entry, this.#itemName, this.#probe.scope);
  }

  /** Whether an entry's reads of roots dirty at item `i` give alike values again. */
  #holds(entry: Entry, i: number, dirty: number): boolean {
    const mask = this.#maskOf(entry);
    if (mask.fixed === -1 || (mask.fixed & dirty) !== 0) return false;
    const probe = this.#probe;
    let bound = false;
    for (const { read, roots, lists, listBits } of mask.reads) {
      if (roots !== -1 && (roots & dirty) === 0) continue;
      // Dirty through lists only, that hold the same items where it reads.
      if (
        roots !== -1 && (roots & dirty & ~listBits) === 0 &&
        this.#sameItems(lists, i)
      ) continue;
      if (!bound) {
        probe.scope.setVariable(this.#itemName, this.#items[i]!);
        bound = true;
      }
      if (!readAgain(read, probe)) return false;
    }
    for (const { read, roots } of mask.dead) {
      if (roots !== -1 && (roots & dirty) === 0) continue;
      if (probe.neverRaises(read.node)) continue;
      probe.scope.setVariable(this.#itemName, this.#items[i]!);
      if (raises(read, probe)) return false;
    }
    return true;
  }

  /** Whether each `list[loop.index0 + k]` read at item `i` reads the same item in both runs' lists. */
  #sameItems(lists: readonly number[], i: number): boolean {
    for (let l = 0; l < lists.length; l += 2) {
      const pair = this.#lists.get(lists[l]!);
      const at = i + lists[l + 1]!;
      if (
        pair === undefined || at < 0 || at >= pair[0].length ||
        at >= pair[1].length || !Object.is(pair[0][at], pair[1][at])
      ) return false;
    }
    return true;
  }

  /** The roots dirty at any item from `from` to `to` (not included). */
  #dirtyOver(from: number, to: number): number {
    let dirty = this.#unclean;
    const windows = this.#windows;
    for (let w = 0; w < windows.length; w++) {
      const window = windows[w]!;
      const clean = window.inside
        ? to <= window.from || from >= window.to
        : from >= window.from && to <= window.to;
      if (clean) dirty &= ~(1 << window.bit);
    }
    return dirty;
  }

  /** The first item after `i` where a window opens or closes. */
  #windowChange(i: number): number {
    let next = Infinity;
    for (const { from, to } of this.#windows) {
      if (from > i && from < next) next = from;
      if (to > i && to < next) next = to;
    }
    return next;
  }

  /** The roots dirty at item `i`: windowed ones only within their windows. */
  #dirtyAt(i: number): number {
    let dirty = this.#unclean;
    const windows = this.#windows;
    for (let w = 0; w < windows.length; w++) {
      const window = windows[w]!;
      const within = i >= window.from && i < window.to;
      if (within !== window.inside) dirty &= ~(1 << window.bit);
    }
    return dirty;
  }

  /** Keeps what item `i` used for the next run. */
  #record(
    i: number,
    entry: Entry | undefined,
    output: string,
    roots: number,
    wrote: number,
  ): void {
    const after = wrote === 1 ? this.#keys() : undefined;
    const fresh = this.#fresh;
    if (fresh !== null) {
      fresh.set(fresh.front + i, entry, output, roots, wrote, after);
    } else this.#journal.push({ i, entry, output, roots, wrote, after });
  }

  /** After the shared item `j`: compares the key roots again where either run wrote. */
  #follow(j: number, wrote: boolean): void {
    const { writes, after, front } = this.#alignment!.run.table;
    if (writes[front + j] === 1) this.#previous = after[front + j]!;
    if (wrote || writes[front + j] === 1) this.#compare(true);
  }

  /**
   * At the first item lined up, the previous run's item `j`: which roots
   * differ from what the previous run held before its item `j`.
   */
  #begin(alignment: Alignment, j: number): void {
    this.#started = true;
    const run = alignment.run;
    const { writes, after, front } = run.table;
    let k = j - 1;
    while (k >= 0 && writes[front + k] !== 1) k--;
    this.#previous = k < 0 ? run.start : after[front + k]!;
    let dirty = 0;
    for (const [root, bit] of this.#history.roots.bits) {
      if (bit >= this.#known || !root.startsWith("loop")) continue;
      const field = root.slice(5);
      if (
        root === "loop"
          ? alignment.fields.length > 0
          : alignment.fields.includes(field)
      ) dirty |= 1 << bit;
    }
    this.#setDirty(dirty);
    this.#compare(false);
  }

  /**
   * Compares the value roots (only the key roots, after a write) with the
   * previous run's at the same item, and sets which are dirty, and where.
   */
  #compare(keysOnly: boolean): void {
    const alignment = this.#alignment!;
    let dirty = this.#dirty;
    const windows = this.#windows.filter((window) => !keysOnly || !window.key);
    for (const [root, bit] of this.#history.roots.bits) {
      if (bit >= this.#known || root.startsWith("loop")) continue;
      const key = isKeyRoot(root);
      if (keysOnly && !key) continue;
      const flag = 1 << bit;
      // Names hold one value for the whole loop; keys change after writes.
      const previous = key ? this.#previous : alignment.run.start;
      const now = valueOf(root, this.#outer);
      const before = previous.get(root);
      if (previous.has(root) && same(now, before)) {
        dirty &= ~flag;
        continue;
      }
      dirty |= flag;
      // The windows hold only for items at the same index in both runs.
      if (alignment.offset !== 0) continue;
      if (root.startsWith("[")) {
        const a = now as Value | undefined;
        const b = before as Value | undefined;
        if (
          a?.type !== "ArrayValue" || b?.type !== "ArrayValue" ||
          !Array.isArray(a.value) || !Array.isArray(b.value)
        ) continue;
        this.#lists.set(bit, [a.value, b.value]);
        // `loop.index0 + k`, |k| <= LIST_REACH, within the first items both
        // lists share: the same item.
        windows.push({
          bit,
          key,
          from: LIST_REACH,
          to: sharedItems(a.value, b.value) - LIST_REACH,
          inside: false,
        });
      } else if (root.startsWith(">")) {
        const a = integerOf(now);
        const b = integerOf(before);
        if (a === undefined || b === undefined) continue;
        const reach = this.#history.roots.reach[bit] ?? 1;
        // `loop.index0 + k` compared with either value gives the same
        // answer, but between them.
        windows.push({
          bit,
          key,
          from: Math.min(a, b) - reach,
          to: Math.max(a, b) + reach + 1,
          inside: true,
        });
      }
    }
    this.#windows = windows;
    this.#setDirty(dirty);
  }

  /** The key roots' values now. */
  #keys(): Map<string, unknown> {
    const keys = new Map<string, unknown>();
    for (const root of this.#history.roots.bits.keys()) {
      if (isKeyRoot(root)) keys.set(root, valueOf(root, this.#outer));
    }
    return keys;
  }

  #setDirty(dirty: number): void {
    this.#dirty = dirty;
    this.#unclean = dirty | ~((1 << this.#known) - 1);
  }
}
