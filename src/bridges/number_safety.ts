/**
 * Whether a JSON body can be written again without changing a number's
 * value as a server in Python or Go reads it: JavaScript numbers are
 * doubles, so some literals come back as other values.
 *
 * @module
 */

/**
 * Whether a parsed value holds a number its literal may not have meant: an
 * infinity (a literal beyond a double) or an integer beyond 2^53. Walking
 * the parsed values costs far less than scanning the text, which only these
 * rare bodies need.
 */
export function holdsUnsafeNumber(value: unknown): boolean {
  // A stack, not recursion: the body may nest deeper than the call stack.
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === "number") {
      if (!Number.isFinite(item) || Math.abs(item) > Number.MAX_SAFE_INTEGER) {
        return true;
      }
    } else if (typeof item === "object" && item !== null) {
      for (const child of Object.values(item)) {
        if (typeof child === "object" || typeof child === "number") {
          stack.push(child);
        }
      }
    }
  }
  return false;
}

const NUMBER = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/**
 * Whether `text` survives `JSON.parse` + `JSON.stringify` with every number's
 * value intact, as a server in Python or Go reads it. JavaScript numbers are
 * doubles: an integer beyond 2^53 (a 64-bit `seed`) comes back as another
 * integer, and a literal beyond a double (`1e400`) as `null`. Floats in range
 * are safe: the server reads both spellings as the same double. `NaN` and
 * the infinities Python's `json.loads` reads are skipped: they are written
 * again as they came.
 *
 * @param text A JSON text as Python's `json.loads` reads it.
 */
export function numbersSurviveRewrite(text: string): boolean {
  // A scan, not a regular expression over strings: V8 runs out of stack on
  // long strings of escapes. Strings are skipped with indexOf.
  for (let i = 0; i < text.length;) {
    const code = text.charCodeAt(i);
    if (code === 0x22) {
      i = stringEnd(text, i + 1);
    } else if (code === 0x2d && text.charCodeAt(i + 1) === 0x49) {
      i += "-Infinity".length; // Python's constant, written again as it came
    } else if (code === 0x2d || (code >= 0x30 && code <= 0x39)) {
      NUMBER.lastIndex = i;
      const literal = NUMBER.exec(text)?.[0] ?? text[i]!;
      if (!numberSurvives(literal)) return false;
      i += literal.length;
    } else i++;
  }
  return true;
}

/** The index after the quote that closes the string whose body starts at `from`. */
function stringEnd(text: string, from: number): number {
  for (let i = from;;) {
    const quote = text.indexOf('"', i);
    if (quote === -1) return text.length;
    let slashes = 0;
    while (text.charCodeAt(quote - 1 - slashes) === 0x5c) slashes++;
    if (slashes % 2 === 0) return quote + 1;
    i = quote + 1;
  }
}

function numberSurvives(literal: string): boolean {
  const value = Number(literal);
  if (/[.eE]/.test(literal)) return Number.isFinite(value);
  return JSON.stringify(value) === literal || literal === "-0";
}
