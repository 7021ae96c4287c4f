// Python string and number semantics that jinja2 templates see, where
// JavaScript's differ (whitespace, code points, float printing, ordering).
import { PyRaisedError } from "./errors.ts";

/** The characters Python's `str.isspace()` accepts (`str.strip()`/`split()`). */
const PY_SPACE = new Set(
  [
    "\t\n\v\f\r\x1c\x1d\x1e\x1f \x85\xa0\u1680",
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a",
    "\u2028\u2029\u202f\u205f\u3000",
  ].join(""),
);

/** Whether a character is whitespace for Python's `str.isspace()`. */
export function isPySpace(ch: string): boolean {
  return PY_SPACE.has(ch);
}

/** Which ends {@linkcode pyStrip} strips. */
export interface StripEnds {
  readonly left: boolean;
  readonly right: boolean;
}

/** `str.strip()`: both ends. */
export const BOTH: StripEnds = { left: true, right: true };
/** `str.lstrip()`. */
export const LEFT: StripEnds = { left: true, right: false };
/** `str.rstrip()`. */
export const RIGHT: StripEnds = { left: false, right: true };

/**
 * Python's `str.strip/lstrip/rstrip(chars)`: `chars` null strips whitespace.
 */
export function pyStrip(
  text: string,
  chars: string | null,
  ends: StripEnds,
): string {
  const { left, right } = ends;
  const drop = chars === null ? PY_SPACE : new Set(Array.from(chars));
  // Scans code points from each end in place: splitting the whole text into
  // code points first would cost time in proportion to the whole message,
  // and Llama 3's template trims every message.
  let start = 0;
  let end = text.length;
  while (left && start < end) {
    const point = String.fromCodePoint(text.codePointAt(start)!);
    if (!drop.has(point)) break;
    start += point.length;
  }
  while (right && end > start) {
    const width =
      end - 2 >= start && isLowSurrogate(text.charCodeAt(end - 1)) &&
        isHighSurrogate(text.charCodeAt(end - 2))
        ? 2
        : 1;
    if (!drop.has(text.slice(end - width, end))) break;
    end -= width;
  }
  return start === 0 && end === text.length ? text : text.slice(start, end);
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

function isLowSurrogate(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}

/** Python's `str.split(sep=None, maxsplit=-1)`. */
export function pySplit(
  text: string,
  sep: string | null,
  maxsplit: number,
): string[] {
  if (sep !== null) {
    if (sep === "") throw new PyRaisedError("empty separator");
    const parts = text.split(sep);
    if (maxsplit < 0 || parts.length <= maxsplit + 1) return parts;
    return [...parts.slice(0, maxsplit), parts.slice(maxsplit).join(sep)];
  }
  const out: string[] = [];
  const points = Array.from(text);
  let i = 0;
  while (i < points.length) {
    while (i < points.length && PY_SPACE.has(points[i]!)) i++;
    if (i >= points.length) break;
    if (maxsplit >= 0 && out.length >= maxsplit) {
      out.push(pyStrip(points.slice(i).join(""), null, RIGHT));
      break;
    }
    const start = i;
    while (i < points.length && !PY_SPACE.has(points[i]!)) i++;
    out.push(points.slice(start, i).join(""));
  }
  return out;
}

const CASED = /[\p{Lu}\p{Ll}\p{Lt}]/u;

/** Python's `str.title()`: a cased letter after a non-cased one is uppercased. */
export function pyTitleMethod(text: string): string {
  let previousCased = false;
  let out = "";
  for (const ch of text) {
    const cased = CASED.test(ch);
    out += cased ? (previousCased ? ch.toLowerCase() : ch.toUpperCase()) : ch;
    previousCased = cased;
  }
  return out;
}

/** jinja2's `title` filter: capitalises after `-`, whitespace, `(`, `{`, `[`, `<`. */
export function pyTitleFilter(text: string): string {
  return text.split(/([-\s({[<]+)/u).filter((item) => item !== "").map(
    (item) => pyCapitalize(item),
  ).join("");
}

/** Python's `str.capitalize()`: the first character upper, the rest lower. */
export function pyCapitalize(text: string): string {
  const [first = "", ...rest] = Array.from(text);
  return first.toUpperCase() + rest.join("").toLowerCase();
}

/** Python's `repr(float)` (also `str(float)` and `json.dumps` for finite values). */
export function pyFloatRepr(value: number): string {
  if (Number.isNaN(value)) return "nan";
  if (!Number.isFinite(value)) return value > 0 ? "inf" : "-inf";
  if (value === 0) return Object.is(value, -0) ? "-0.0" : "0.0";
  const [mantissa = "", exp = "0"] = value.toExponential().split("e");
  const exponent = Number(exp);
  const negative = mantissa.startsWith("-");
  const digits = mantissa.replace("-", "").replace(".", "");
  const sign = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    const head = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const expSign = exponent < 0 ? "-" : "+";
    return `${sign}${head}e${expSign}${
      String(Math.abs(exponent)).padStart(2, "0")
    }`;
  }
  if (exponent < 0) return `${sign}0.${"0".repeat(-exponent - 1)}${digits}`;
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, "0");
  const fraction = digits.slice(exponent + 1) || "0";
  return `${sign}${whole}.${fraction}`;
}

/** Python's `repr(str)`. */
export function pyStrRepr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (ch === quote || ch === "\\") out += "\\" + ch;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (code < 0x20 || (code >= 0x7f && code <= 0xa0)) {
      out += "\\x" + code.toString(16).padStart(2, "0");
    } else out += ch;
  }
  return out + quote;
}

/** Compares strings by code point, as Python's `sorted()` of `str` does. */
export function compareCodePoints(a: string, b: string): number {
  const left = Array.from(a);
  const right = Array.from(b);
  const n = Math.min(left.length, right.length);
  for (let i = 0; i < n; i++) {
    const d = left[i]!.codePointAt(0)! - right[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return left.length - right.length;
}

/** Python's `str.splitlines()`. */
export function pySplitlines(text: string): string[] {
  // Python's line boundaries include the file/group/record separators.
  // deno-lint-ignore no-control-regex
  const lines = text.split(/\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/);
  if (lines.at(-1) === "") lines.pop();
  return lines;
}

/** Python's `str.replace(old, new, count)`; a negative count replaces all. */
export function pyReplace(
  text: string,
  old: string,
  replacement: string,
  count: number,
): string {
  const limit = count < 0 ? Infinity : count;
  if (old === "") {
    // Python inserts between code points, at most `count` times.
    const chars = Array.from(text);
    let out = "";
    let done = 0;
    for (let i = 0; i <= chars.length; i++) {
      if (done < limit) {
        out += replacement;
        done++;
      }
      out += chars[i] ?? "";
    }
    return out;
  }
  let out = "";
  let from = 0;
  let done = 0;
  while (done < limit) {
    const at = text.indexOf(old, from);
    if (at < 0) break;
    out += text.slice(from, at) + replacement;
    from = at + old.length;
    done++;
  }
  return out + text.slice(from);
}
