/**
 * Copies of JSON-like values a host keeps as its own, and whether a value
 * still equals its copy, so that a message the caller edits after a count
 * never passes for unchanged: the calling thread renders unchanged messages
 * from these copies, and the count worker's client compares what it sent.
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

/**
 * Whether `value` equals a {@linkcode plainCopy} of a value: the same
 * structure, keys in the same order (a template may iterate them), equal
 * primitives. Nothing equals {@linkcode NOT_PLAIN}.
 *
 * @param value The value now.
 * @param kept The copy.
 * @returns Whether they are equal.
 */
export function equalsPlainCopy(value: unknown, kept: unknown): boolean {
  if (kept === NOT_PLAIN) return false;
  if (typeof kept !== "object" || kept === null) return Object.is(value, kept);
  if (typeof value !== "object" || value === null) return false;
  if (Array.isArray(kept)) {
    if (!Array.isArray(value) || value.length !== kept.length) return false;
    for (let i = 0; i < kept.length; i++) {
      if (!equalsPlainCopy(value[i], kept[i])) return false;
    }
    return true;
  }
  if (Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return false;
  const keptKeys = Object.keys(kept);
  // `for in` walks the keys in order without a list of them; the prototype
  // holds none (any it held would differ from the copy's own keys).
  let i = 0;
  for (const key in value) {
    if (
      key !== keptKeys[i] ||
      !equalsPlainCopy(
        (value as Record<string, unknown>)[key],
        (kept as Record<string, unknown>)[key],
      )
    ) return false;
    i++;
  }
  return i === keptKeys.length;
}
