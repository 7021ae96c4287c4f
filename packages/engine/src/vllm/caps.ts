/**
 * Reads integers as vLLM reads them: its request models are pydantic v2
 * models in lax mode, so `"5"`, `5.0` and `true` are integers there too.
 *
 * @module
 */

// Rust's `str::trim` strips Unicode White_Space: unlike JS `trim()`, that
// includes U+0085 and excludes U+FEFF.
const SPACE =
  "\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const EDGE_SPACE = new RegExp(`^[${SPACE}]+|[${SPACE}]+$`, "g");
/** What Rust's `i64::from_str` accepts. */
const SHORT_INTEGER = /^[+-]?[0-9]+$/;
/** What num-bigint's `BigInt::from_str` accepts: it skips inner underscores. */
const LONG_INTEGER = /^[+-]?[0-9][0-9_]*$/;
/** CPython's limit on the digits of an integer string. */
const MAX_DIGITS = 4300;

/**
 * Reads `value` as pydantic-core's lax `int` validator does: booleans,
 * integral numbers, and strings of ASCII digits (trimmed, signed, with
 * underscores between digits or a fraction of zeros, but not both).
 *
 * @param value Any JSON value.
 * @returns The integer, or `undefined` where pydantic would reject the value
 * or the integer is not a safe JavaScript integer.
 */
export function laxInteger(value: unknown): number | undefined {
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value === "number") {
    return Number.isSafeInteger(value) ? withoutNegativeZero(value) : undefined;
  }
  if (typeof value !== "string") return undefined;
  const text = value.replace(EDGE_SPACE, "");
  if (text.length > MAX_DIGITS) return undefined;
  // pydantic-core's `str_as_int`: the length that picks the parser is the
  // trimmed input's, also for the stripped variants.
  const parse = (candidate: string): number | undefined =>
    parseSigned(candidate, text.length);
  const plain = parse(text);
  if (plain !== undefined) return plain;
  const point = text.indexOf(".");
  if (point >= 0) {
    return /^0*$/.test(text.slice(point + 1))
      ? parse(text.slice(0, point))
      : undefined;
  }
  if (text.startsWith("_") || text.endsWith("_") || text.includes("__")) {
    return undefined;
  }
  return text.includes("_") ? parse(text.replaceAll("_", "")) : undefined;
}

function parseSigned(text: string, length: number): number | undefined {
  const pattern = length < 19 ? SHORT_INTEGER : LONG_INTEGER;
  if (!pattern.test(text)) return undefined;
  const number = Number(text.replaceAll("_", ""));
  return Number.isSafeInteger(number) ? withoutNegativeZero(number) : undefined;
}

/** Python has no negative zero: `int("-0")` is `0`. */
function withoutNegativeZero(number: number): number {
  return number === 0 ? 0 : number;
}

/**
 * Reads an output cap as vLLM does: a lax integer that must be positive.
 *
 * @param value A cap field's value.
 * @returns A positive safe integer, or `undefined`.
 */
export function laxPositiveInteger(value: unknown): number | undefined {
  const number = laxInteger(value);
  return number !== undefined && number > 0 ? number : undefined;
}
