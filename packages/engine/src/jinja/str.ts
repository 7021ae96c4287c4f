// Python's `str` methods, on code points.
import { pyStrFormat } from "./format.ts";
import { itemsOf, raised, tuple, unsupported } from "./objects.ts";
import {
  BOTH,
  isPySpace,
  LEFT,
  pyCapitalize,
  pyReplace,
  pySplit,
  pySplitlines,
  pyStrip,
  pyTitleMethod,
  RIGHT,
  type StripEnds,
} from "./py.ts";
import { make, type Value } from "./values.ts";

type Kwargs = Map<string, Value>;
/** A method's body: the receiver's text, its positional and keyword arguments. */
export type Body = (text: string, args: Value[], kw: Kwargs) => Value;

const str = (s: string): Value => make("StringValue", s);
const int = (n: number): Value => make("IntegerValue", n);
const bool = (b: boolean): Value => make("BooleanValue", b);

function textArg(v: Value | undefined): string {
  if (v?.type !== "StringValue") throw raised("must be str");
  return v.value as string;
}

const SURROGATE = /[\ud800-\udfff]/;

// A UTF-16 index as Python's code-point index.
function points(text: string, unit: number): number {
  return unit < 0 || !SURROGATE.test(text)
    ? unit
    : Array.from(text.slice(0, unit)).length;
}

function noRange(args: Value[], kw: Kwargs): void {
  if (args.length > 1 || kw.size > 0) {
    throw unsupported("start and end arguments of str methods");
  }
}

function find(text: string, args: Value[], kw: Kwargs): number {
  noRange(args, kw);
  return points(text, text.indexOf(textArg(args[0])));
}

function rfind(text: string, args: Value[], kw: Kwargs): number {
  noRange(args, kw);
  return points(text, text.lastIndexOf(textArg(args[0])));
}

function count(text: string, args: Value[], kw: Kwargs): number {
  noRange(args, kw);
  const sub = textArg(args[0]);
  if (sub === "") return Array.from(text).length + 1;
  return text.split(sub).length - 1;
}

function every(text: string, test: (ch: string) => boolean): boolean {
  if (text === "") return false;
  for (const ch of text) if (!test(ch)) return false;
  return true;
}

function isdigit(text: string): boolean {
  if (/^\p{Nd}+$/u.test(text)) return true;
  if (!/^\p{N}+$/u.test(text)) return false;
  // Some No/Nl characters (superscripts) are digits for Python, others not.
  throw unsupported("isdigit() of non-decimal numerals");
}

function cased(text: string, want: RegExp, other: RegExp): boolean {
  return want.test(text) && !other.test(text);
}

function zfill(text: string, args: Value[]): string {
  const width = args[0]?.value as number;
  const len = Array.from(text).length;
  if (len >= width) return text;
  const fill = "0".repeat(width - len);
  return text[0] === "+" || text[0] === "-"
    ? text[0] + fill + text.slice(1)
    : fill + text;
}

function rsplit(text: string, args: Value[], kw: Kwargs): Value {
  const sepV = args[0] ?? kw.get("sep");
  const max = (args[1] ?? kw.get("maxsplit"))?.value as number | undefined ??
    -1;
  const sep = sepV === undefined || sepV.type === "NullValue"
    ? null
    : textArg(sepV);
  if (sep === null) {
    if (max >= 0) throw unsupported("rsplit(None, n)");
    return make("ArrayValue", pySplit(text, null, -1).map(str));
  }
  if (sep === "") throw raised("empty separator");
  const parts = text.split(sep);
  if (max < 0 || parts.length <= max + 1) {
    return make("ArrayValue", parts.map(str));
  }
  const keep = parts.length - max;
  return make(
    "ArrayValue",
    [parts.slice(0, keep).join(sep), ...parts.slice(keep)].map(str),
  );
}

function partition(fromRight: boolean): Body {
  return (text, args) => {
    const sep = textArg(args[0]);
    if (sep === "") throw raised("empty separator");
    const at = fromRight ? text.lastIndexOf(sep) : text.indexOf(sep);
    const parts = at < 0
      ? (fromRight ? ["", "", text] : [text, "", ""])
      : [text.slice(0, at), sep, text.slice(at + sep.length)];
    return tuple(parts.map(str));
  };
}

/** A string argument that may be left out or None. */
function optionalString(value: Value | undefined): string | null {
  if (
    value === undefined || value.type === "NullValue" ||
    value.type === "UndefinedValue"
  ) {
    return null;
  }
  if (value.type !== "StringValue") {
    throw raised("expected a string argument");
  }
  return value.value as string;
}

function strip(ends: StripEnds): Body {
  return (text, args, kw) =>
    str(pyStrip(text, optionalString(args[0] ?? kw.get("chars")), ends));
}

function split(text: string, args: Value[], kw: Kwargs): Value {
  const sep = optionalString(args[0] ?? kw.get("sep"));
  const max = (args[1] ?? kw.get("maxsplit"))?.value as number | undefined;
  return make("ArrayValue", pySplit(text, sep, max ?? -1).map(str));
}

/** `startswith`/`endswith`: a string, or a tuple of strings, without bounds. */
function affix(test: (text: string, affix: string) => boolean): Body {
  return (text, args, kw) => {
    noRange(args, kw);
    const what = args[0];
    if (what?.type === "TupleValue") {
      return bool((what.value as Value[]).some((v) => test(text, textArg(v))));
    }
    return bool(test(text, textArg(what)));
  };
}

function replace(text: string, args: Value[], kw: Kwargs): Value {
  const count = args[2] ?? kw.get("count");
  if (count !== undefined && count.type !== "IntegerValue") {
    throw raised("'count' must be an integer");
  }
  return str(
    pyReplace(
      text,
      textArg(args[0]),
      textArg(args[1]),
      count === undefined ? -1 : Number(count.value),
    ),
  );
}

/** The methods, by name, called on a string receiver. */
export const STRING_METHODS: ReadonlyMap<string, Body> = new Map<string, Body>([
  ["strip", strip(BOTH)],
  ["lstrip", strip(LEFT)],
  ["rstrip", strip(RIGHT)],
  ["split", split],
  ["title", (t) => str(pyTitleMethod(t))],
  ["capitalize", (t) => str(pyCapitalize(t))],
  ["format", (t, a, k) => str(pyStrFormat(t, a, k))],
  ["upper", (t) => str(t.toUpperCase())],
  ["lower", (t) => str(t.toLowerCase())],
  ["startswith", affix((t, x) => t.startsWith(x))],
  ["endswith", affix((t, x) => t.endsWith(x))],
  ["replace", replace],
  ["find", (t, a, k) => int(find(t, a, k))],
  ["rfind", (t, a, k) => int(rfind(t, a, k))],
  ["index", (t, a, k) => {
    const i = find(t, a, k);
    if (i < 0) throw raised("substring not found");
    return int(i);
  }],
  ["count", (t, a, k) => int(count(t, a, k))],
  ["splitlines", (t, a, k) => {
    if (a.length > 0 || k.size > 0) {
      throw unsupported("splitlines(keepends)");
    }
    return make("ArrayValue", pySplitlines(t).map(str));
  }],
  ["isdigit", (t) => bool(t !== "" && isdigit(t))],
  ["isalpha", (t) => bool(every(t, (c) => /\p{L}/u.test(c)))],
  ["isalnum", (t) => bool(every(t, (c) => /[\p{L}\p{N}]/u.test(c)))],
  ["isspace", (t) => bool(every(t, isPySpace))],
  [
    "islower",
    (t) => bool(cased(t, /\p{Lowercase}/u, /[\p{Uppercase}\p{Lt}]/u)),
  ],
  [
    "isupper",
    (t) => bool(cased(t, /\p{Uppercase}/u, /[\p{Lowercase}\p{Lt}]/u)),
  ],
  ["zfill", (t, a) => str(zfill(t, a))],
  ["rsplit", rsplit],
  ["partition", partition(false)],
  ["rpartition", partition(true)],
  ["join", (t, a) => {
    const items = a[0] === undefined ? [] : itemsOf(a[0]);
    return str(items.map((v) => textArg(v)).join(t));
  }],
]);
