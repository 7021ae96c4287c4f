/**
 * Copies of JSON-like values a host keeps as its own, and the shapes of
 * lists of them, to tell whether a value still equals what was copied, so that a message the
 * caller edits after a count never passes for unchanged: the calling thread
 * renders unchanged messages from these copies, and the count worker's
 * client compares what it sent.
 *
 * @module
 */

/** What {@linkcode plainCopy} gives for a value it cannot copy: never equal to anything. */
export const NOT_PLAIN: unique symbol = Symbol("not plain");

/** Deeper values are not copied. */
const MAX_DEPTH = 32;

/**
 * A copy of a JSON-like value: arrays and plain objects copied, in their key
 * order; strings, numbers, booleans, `null` and `undefined` as they are
 * (immutable). {@linkcode NOT_PLAIN} when anything within is another kind
 * of value (a class instance, a function, a symbol) or nested deeper than
 * 32 levels.
 *
 * @param value The value.
 * @returns The copy, or {@linkcode NOT_PLAIN}.
 */
export function plainCopy(value: unknown): unknown {
  return copy(value, 0);
}

function copy(value: unknown, depth: number): unknown {
  if (typeof value !== "object" || value === null) {
    return typeof value === "function" || typeof value === "symbol" ||
        typeof value === "bigint"
      ? NOT_PLAIN
      : value;
  }
  if (depth >= MAX_DEPTH) return NOT_PLAIN;
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) {
      const item = copy(value[i], depth + 1);
      if (item === NOT_PLAIN) return NOT_PLAIN;
      out[i] = item;
    }
    return out;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return NOT_PLAIN;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const item = copy((value as Record<string, unknown>)[key], depth + 1);
    if (item === NOT_PLAIN) return NOT_PLAIN;
    out[key] = item;
  }
  return out;
}

/** Marks in a shape: where an object or an array starts, where an object ends. */
const OBJECT: unique symbol = Symbol("object");
const ARRAY: unique symbol = Symbol("array");
const END: unique symbol = Symbol("end");

/**
 * The shapes of a list of JSON-like values, to tell later whether a list
 * still holds equal values: each value as a run of one flat list
 * (primitives as they are, an array as a mark, its length and its items, an
 * object as a mark, each key followed by its value, and an end mark).
 * Comparing against one list read in order touches far less memory than
 * walking copies of the values, object by object.
 *
 * @example Tell a message edited in place
 * ```ts
 * import { PlainShapes } from "@incontext/engine";
 * const message = { role: "user", content: "Hi" };
 * const shapes = new PlainShapes();
 * console.assert(shapes.push(message));
 * console.assert(shapes.equalsAt(0, { role: "user", content: "Hi" }));
 * message.content = "Hello";
 * console.assert(!shapes.equalsAt(0, message));
 * ```
 */
export class PlainShapes {
  #flat: unknown[] = [];
  /** Where each value's run starts, then where the last one ends. */
  #starts: number[] = [0];

  /** How many values. */
  get length(): number {
    return this.#starts.length - 1;
  }

  /**
   * Adds a value's shape.
   *
   * @returns false, adding nothing, when the value is not one
   * {@linkcode plainCopy} copies.
   */
  push(value: unknown): boolean {
    const flat = this.#flat;
    const length = flat.length;
    if (!flatten(value, flat, 0)) {
      flat.length = length;
      return false;
    }
    this.#starts.push(flat.length);
    return true;
  }

  /**
   * Whether `value` equals value `i`: the same structure, keys in the same
   * order (a template may iterate them), equal primitives.
   */
  equalsAt(i: number, value: unknown): boolean {
    return walk(this.#flat, this.#starts[i]!, value) === this.#starts[i + 1];
  }

  /**
   * How many first `values` equal this list's first values ({@linkcode equalsAt}),
   * compared up to `limit` of this list's values.
   */
  sharedPrefix(
    values: readonly unknown[],
    limit: number = this.length,
  ): number {
    const n = Math.min(limit, this.length, values.length);
    let i = 0;
    while (i < n && this.equalsAt(i, values[i])) i++;
    return i;
  }

  /** Keeps the first `n` values only. */
  truncate(n: number): void {
    this.#starts.length = n + 1;
    this.#flat.length = this.#starts[n]!;
  }

  /** A copy holding the first `n` values. */
  slice(n: number): PlainShapes {
    const copy = new PlainShapes();
    copy.#starts = this.#starts.slice(0, n + 1);
    copy.#flat = this.#flat.slice(0, copy.#starts[n]!);
    return copy;
  }
}

function flatten(value: unknown, shape: unknown[], depth: number): boolean {
  if (typeof value !== "object" || value === null) {
    if (
      typeof value === "function" || typeof value === "symbol" ||
      typeof value === "bigint"
    ) return false;
    shape.push(value);
    return true;
  }
  if (depth >= MAX_DEPTH) return false;
  if (Array.isArray(value)) {
    shape.push(ARRAY, value.length);
    for (let i = 0; i < value.length; i++) {
      if (!flatten(value[i], shape, depth + 1)) return false;
    }
    return true;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return false;
  shape.push(OBJECT);
  for (const key of Object.keys(value)) {
    shape.push(key);
    if (!flatten((value as Record<string, unknown>)[key], shape, depth + 1)) {
      return false;
    }
  }
  shape.push(END);
  return true;
}

/**
 * Walks `value` along `shape` from `at`: where its shape ends there, or -1
 * where the value differs. Primitives are compared in place, without a call.
 */
function walk(shape: readonly unknown[], at: number, value: unknown): number {
  const mark = shape[at++];
  if (mark === OBJECT) {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      return -1;
    }
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) return -1;
    // `for in` walks the keys in order without a list of them; the
    // prototype holds none (any it held would not be in the shape).
    for (const key in value) {
      if (shape[at++] !== key) return -1;
      const item = (value as Record<string, unknown>)[key];
      const next = shape[at];
      // The same primitive (a mark is never a value), told by `Object.is`
      // without reading it: `===` reads a string to compare it, most
      // often out of the processor's caches.
      if (Object.is(item, next)) at++;
      else if (next !== OBJECT && next !== ARRAY) return -1;
      else if ((at = walk(shape, at, item)) < 0) return -1;
    }
    return shape[at] === END ? at + 1 : -1;
  }
  if (mark === ARRAY) {
    if (!Array.isArray(value) || value.length !== shape[at++]) return -1;
    for (let i = 0; i < value.length; i++) {
      if ((at = walk(shape, at, value[i])) < 0) return -1;
    }
    return at;
  }
  return Object.is(value, mark) ? at : -1;
}
