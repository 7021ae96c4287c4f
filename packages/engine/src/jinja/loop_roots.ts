// The roots of the values a reused loop item read (see loop_runs.ts): each
// read's names other than the item, as bits of the loop's roots, and what
// a root holds in a render.
import { isNamespace } from "./loop_fields.ts";
import {
  alike,
  type Entry,
  IMPURE_GLOBALS,
  type Read,
  staticInfo,
} from "./memo.ts";
import { DICT_ATTRIBUTES } from "./names.ts";
import { typesRelied } from "./never_raises.ts";
import { type Node, resolve, type Scope } from "./scope.ts";
import type { Value } from "./values.ts";

/** A read and its roots, as bits of its loop's roots; `-1` when some root has no bit. */
export interface RootedRead {
  readonly read: Read;
  readonly roots: number;
  /** Its `list[loop.index0 + k]` reads: the list root's bit, then `k`, for each. */
  readonly lists: readonly number[];
  /** The bits of those lists' roots. */
  readonly listBits: number;
}

/** An entry's roots. */
export interface Mask {
  /** Roots of the globals and namespaces it needs as they were. */
  readonly fixed: number;
  /** Its reads, checked where a root is dirty. */
  readonly reads: readonly RootedRead[];
  /** Its unchecked reads (memo.ts `dead`), evaluated where a root is dirty and they might raise. */
  readonly dead: readonly RootedRead[];
  /** All of them. */
  readonly union: number;
}

/** Roots a loop follows, one bit each: past it, an entry is never skipped. */
const MAX_ROOTS = 30;
/** The largest `k` of a `list[loop.index0 + k]` root: a larger one is a read of the whole list. */
export const LIST_REACH = 4;
/** A root's value that compares equal to nothing: the read is checked. */
const UNKNOWN: unique symbol = Symbol("unknown");

/** The roots a loop follows, one bit each, and its entries' roots. */
export class LoopRoots {
  readonly bits = new Map<string, number>();
  /** By bit: the largest `|k| + 1` of the `loop.index0 + k` a `>` root is compared with. */
  readonly reach: number[] = [];

  /** The bit of a root, or -1 once the loop follows as many as it can. */
  bit(root: string): number {
    let bit = this.bits.get(root);
    if (bit === undefined) {
      if (this.bits.size >= MAX_ROOTS) return -1;
      this.bits.set(root, bit = this.bits.size);
    }
    return bit;
  }

  /** The bits of roots; -1 if one has none. */
  bitsOf(roots: Iterable<string>): number {
    let bits = 0;
    for (const root of roots) {
      const bit = this.bit(root);
      if (bit < 0) return -1;
      bits |= 1 << bit;
    }
    return bits;
  }

  /**
   * An entry's roots, as bits; computed once per entry (entries are per
   * loop). `probe` judges whether its unchecked reads may raise.
   */
  maskOf(entry: Entry, itemName: string, probe: Scope): Mask {
    let mask = entry.derived as Mask | undefined;
    if (mask !== undefined) return mask;
    const globals = this.bitsOf(entry.globals.map((name) => `=${name}`));
    const namespaces = this.bitsOf(entry.namespaces.map((name) => `?${name}`));
    const fixed = globals === -1 || namespaces === -1
      ? -1
      : globals | namespaces;
    const reads = entry.reads.map((read) => {
      const lists: number[] = [];
      let listBits = 0;
      for (const [name, offset] of staticInfo(read.node)!.indexed) {
        const bit = this.bits.get(`[${name}`);
        if (bit === undefined || Math.abs(offset) > LIST_REACH) continue;
        lists.push(bit, offset);
        listBits |= 1 << bit;
      }
      return {
        read,
        roots: this.bitsOf(this.#rootsOf(read.node, itemName)),
        lists,
        listBits,
      };
    });
    const dead = entry.dead.map((read) => {
      // A read that cannot raise whatever the values: only the types count.
      const types = typesRelied(read.node, probe);
      return {
        read,
        roots: this.bitsOf(
          types?.map((name) => `:${name}`) ??
            this.#rootsOf(read.node, itemName),
        ),
        lists: [],
        listBits: 0,
      };
    });
    let union = fixed;
    for (const rooted of [...reads, ...dead]) {
      union = union === -1 || rooted.roots === -1 ? -1 : union | rooted.roots;
    }
    mask = { fixed, reads, dead, union };
    entry.derived = mask;
    return mask;
  }

  /** The roots an expression reads, other than the loop's item (see above). */
  #rootsOf(node: Node, itemName: string): string[] {
    const info = staticInfo(node)!;
    const roots: string[] = [];
    for (const name of info.bare) {
      if (name !== itemName) roots.push(name === "loop" ? "loop" : `=${name}`);
    }
    for (const [name, key] of info.keyUses) {
      if (name === itemName || info.bare.has(name)) continue;
      roots.push(name === "loop" ? `loop.${key}` : `.${name}.${key}`);
    }
    for (const [name, offset] of info.indexed) {
      if (name === itemName || info.bare.has(name)) continue;
      roots.push(Math.abs(offset) <= LIST_REACH ? `[${name}` : `=${name}`);
    }
    for (const [root, offset] of info.compared) {
      const name = root.startsWith("=") ? root.slice(1) : root.split(".")[1]!;
      if (name === itemName) continue;
      const bit = this.bit(`>${root}`);
      if (bit >= 0) {
        this.reach[bit] = Math.max(this.reach[bit] ?? 0, Math.abs(offset) + 1);
      }
      roots.push(`>${root}`);
    }
    return roots;
  }
}

/** What a value root holds now, seen from the loop's enclosing scope. */
export function valueOf(root: string, outer: Scope): unknown {
  const kind = root[0];
  if (kind === ">") return valueOf(root.slice(1), outer);
  if (kind === "=" || kind === "[" || kind === "?" || kind === ":") {
    const name = root.slice(1);
    // The clock gives another value whenever it is read.
    if (kind === "=" && IMPURE_GLOBALS.has(name)) return UNKNOWN;
    const value = resolve(outer, name)?.variables.get(name);
    return kind === "?"
      ? isNamespace(value)
      : kind === ":"
      ? value?.type
      : value;
  }
  const dot = root.indexOf(".", 1);
  const name = root.slice(1, dot);
  const key = root.slice(dot + 1);
  const object = resolve(outer, name)?.variables.get(name);
  const held = object?.value;
  // A namespace's, a mapping's or an enclosing loop's entry; a dict's
  // method or anything else is checked.
  if (
    !(held instanceof Map) || DICT_ATTRIBUTES.has(key) ||
    object!.type === "IteratorValue" || object!.type.startsWith("dict_")
  ) return UNKNOWN;
  return held.get(key);
}

/** Whether two root values are alike (memo.ts `alike`), UNKNOWN never. */
export function same(a: unknown, b: unknown): boolean {
  if (a === UNKNOWN || b === UNKNOWN) return false;
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || !a || !b) return false;
  return alike(a as Value, b as Value);
}

/** How many first items two lists share (the same item values). */
export function sharedItems(
  x: readonly Value[],
  y: readonly Value[],
): number {
  const n = Math.min(x.length, y.length);
  let k = 0;
  while (k < n && Object.is(x[k], y[k])) k++;
  return k;
}

/** Whether a root is a namespace key, which an item's write may change. */
export function isKeyRoot(root: string): boolean {
  return root.startsWith(".") || root.startsWith(">.");
}

/** An integer value's number, or undefined. */
export function integerOf(value: unknown): number | undefined {
  const v = value as Value | undefined;
  return v?.type === "IntegerValue" && typeof v.value === "number"
    ? v.value
    : undefined;
}
