/**
 * How long a start two strings share, found by the native string
 * comparison: a grown render against the previous one, a grown request
 * body against the previous one.
 *
 * @module
 */

/** The first span compared; then halves, around the first difference. */
const CHUNK = 65536;

/**
 * The length of the common prefix of two strings. Compares native spans,
 * halving their size around the first difference, so that the native string
 * comparison does the work instead of a loop over code units.
 *
 * @example Two texts that differ at their end
 * ```ts
 * import { commonPrefixLength } from "@incontext/engine";
 * console.assert(commonPrefixLength("a grown text", "a grown tale") === 9);
 * ```
 *
 * @param a A string.
 * @param b Another.
 * @returns How many first code units they share.
 */
export function commonPrefixLength(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  for (let size = CHUNK; size >= 1; size >>= 1) {
    while (i + size <= n && a.slice(i, i + size) === b.slice(i, i + size)) {
      i += size;
    }
  }
  return i;
}
