// jinja2's filters over lists, mappings, numbers and text, with Python
// semantics (filter_table.ts names them).
import { isPySpace, pyReplace, pySplitlines } from "./py.ts";
import { pyFormatPercent } from "./format.ts";
import { make, pyRepr, pyStr, type Value } from "./values.ts";
import {
  attrGetter,
  flag,
  int,
  isNumber,
  itemsOf,
  iterator,
  type Kwargs,
  lowered,
  namedTuple,
  num,
  params,
  pyCompare,
  pyEq,
  PyRaisedError,
  raised,
  splitArgs,
  str,
  tuple,
  UNDEFINED,
  UndefinedUseError,
  unsupported,
} from "./objects.ts";
import { JINJA2_FILTERS } from "./names.ts";
import { pyAttribute } from "./lookup.ts";
import { selectOrReject } from "./tests.ts";
import { htmlEscape, stripTags } from "./markup.ts";

function dictsort(all: Value[]): Value {
  const [d, [cs, by, reverse]] = params(all, [
    "case_sensitive",
    "by",
    "reverse",
  ]);
  if (!(d.value instanceof Map)) {
    throw raised("dictsort expects a mapping");
  }
  const pos = by === undefined || by.value === "key"
    ? 0
    : by.value === "value"
    ? 1
    : (() => {
      throw raised("You can only sort by either 'key' or 'value'");
    })();
  const entries = Array.from(
    d.value as Map<string, Value>,
    ([k, v]) => [str(k), v] as [Value, Value],
  );
  const pairs = entries.map((e) => tuple(e));
  const key = (t: Value) => {
    const v = (t.value as Value[])[pos]!;
    return flag(cs) ? v : lowered(v);
  };
  return make("ArrayValue", sortStable(pairs, key, flag(reverse)));
}

function sortStable(
  items: Value[],
  key: (v: Value) => Value,
  reverse: boolean,
) {
  // Python's sorted(reverse=True) keeps equal items in their original order.
  return items.map((v, i) => [key(v), v, i] as const).sort((a, b) =>
    (reverse ? pyCompare(b[0], a[0]) : pyCompare(a[0], b[0])) || a[2] - b[2]
  ).map((e) => e[1]);
}

function groupby(all: Value[]): Value {
  const [seq, [attribute, dflt, cs]] = params(all, [
    "attribute",
    "default",
    "case_sensitive",
  ]);
  const sensitive = flag(cs);
  const key = attrGetter(attribute, { lower: !sensitive, default: dflt });
  const output = attrGetter(attribute, { default: dflt });
  const groups: [Value, Value[]][] = [];
  for (const item of sortStable(itemsOf(seq), key, false)) {
    const k = key(item);
    const last = groups.at(-1);
    if (last !== undefined && pyEq(last[0], k)) last[1].push(item);
    else groups.push([k, [item]]);
  }
  return make(
    "ArrayValue",
    groups.map(([k, items]) => {
      const grouper = sensitive ? k : output(items[0]!);
      const list = make("ArrayValue", items);
      return namedTuple(
        [grouper, list],
        new Map([["grouper", grouper], ["list", list]]),
      );
    }),
  );
}

function sum(all: Value[]): Value {
  const [seq, [attribute, start]] = params(all, ["attribute", "start"]);
  const get = attrGetter(attribute);
  let total = start ?? int(0);
  for (const item of itemsOf(seq)) total = add(total, get(item));
  return total;
}

function add(a: Value, b: Value): Value {
  if (isNumber(a) && isNumber(b)) {
    const float = a.type === "FloatValue" || b.type === "FloatValue";
    return make(float ? "FloatValue" : "IntegerValue", num(a) + num(b));
  }
  if (Array.isArray(a.value) && Array.isArray(b.value) && a.type === b.type) {
    return make(a.type === "TupleValue" ? "ArrayValue" : a.type, [
      ...a.value as Value[],
      ...b.value as Value[],
    ]);
  }
  throw raised(`unsupported operand types for +: ${a.type} and ${b.type}`);
}

function minMax(sign: number) {
  return (all: Value[]): Value => {
    const [seq, [cs, attribute]] = params(all, ["case_sensitive", "attribute"]);
    const key = attrGetter(attribute, { lower: !flag(cs) });
    let best: Value | undefined;
    let bestKey: Value | undefined;
    for (const item of itemsOf(seq)) {
      const k = key(item);
      if (bestKey === undefined || sign * pyCompare(k, bestKey) > 0) {
        best = item;
        bestKey = k;
      }
    }
    return best ?? UNDEFINED();
  };
}

function batch(all: Value[]): Value {
  const [seq, [count, fill]] = params(all, ["linecount", "fill_with"]);
  const n = num(count!);
  if (!(n > 0)) throw unsupported("batch() of a size below 1");
  const out: Value[] = [];
  let tmp: Value[] = [];
  for (const item of itemsOf(seq)) {
    if (tmp.length === n) {
      out.push(make("ArrayValue", tmp));
      tmp = [];
    }
    tmp.push(item);
  }
  if (tmp.length > 0) {
    if (fill !== undefined && fill.type !== "NullValue") {
      while (tmp.length < n) tmp.push(fill);
    }
    out.push(make("ArrayValue", tmp));
  }
  return iterator(out);
}

function sliceFilter(all: Value[]): Value {
  const [seq, [slicesV, fill]] = params(all, ["slices", "fill_with"]);
  const items = itemsOf(seq);
  const slices = num(slicesV!);
  const perSlice = Math.floor(items.length / slices);
  const withExtra = items.length % slices;
  let offset = 0;
  const out: Value[] = [];
  for (let i = 0; i < slices; i++) {
    const start = offset + i * perSlice;
    if (i < withExtra) offset++;
    const end = offset + (i + 1) * perSlice;
    const tmp = items.slice(start, end);
    if (fill !== undefined && fill.type !== "NullValue" && i >= withExtra) {
      tmp.push(fill);
    }
    out.push(make("ArrayValue", tmp));
  }
  return iterator(out);
}

function unique(all: Value[]): Value {
  const [seq, [cs, attribute]] = params(all, ["case_sensitive", "attribute"]);
  const key = attrGetter(attribute, { lower: !flag(cs) });
  const seen = new Set<string>();
  const out: Value[] = [];
  for (const item of itemsOf(seq)) {
    const k = key(item);
    const h = isNumber(k)
      ? `n${num(k)}`
      : k.type === "StringValue"
      ? `s${k.value}`
      : k.type === "NullValue"
      ? "None"
      : (k.type === "TupleValue" ? `t${pyRepr(k)}` : (() => {
        throw raised(`unhashable type: '${k.type}'`);
      })());
    if (!seen.has(h)) {
      seen.add(h);
      out.push(item);
    }
  }
  return iterator(out);
}

function indent(all: Value[]): Value {
  const [s, [width, first, blank]] = params(all, ["width", "first", "blank"]);
  // jinja2 appends "\n" to the operand itself: only text takes it.
  if (s.type === "UndefinedValue") {
    throw new UndefinedUseError("indent of an undefined value");
  }
  if (s.type !== "StringValue") {
    throw new PyRaisedError(`unsupported operand type for indent: ${s.type}`);
  }
  const ind = width === undefined
    ? "    "
    : width.type === "StringValue"
    ? width.value as string
    : " ".repeat(num(width));
  const text = pyStr(s) + "\n";
  let rv: string;
  if (flag(blank)) rv = pySplitlines(text).join("\n" + ind);
  else {
    const lines = pySplitlines(text);
    rv = lines.shift() ?? "";
    if (lines.length > 0) {
      rv += "\n" + lines.map((l) => l ? ind + l : l).join("\n");
    }
  }
  return str(flag(first) ? ind + rv : rv);
}

function center(all: Value[]): Value {
  const [s, [widthV]] = params(all, ["width"]);
  const text = pyStr(s);
  const width = widthV === undefined ? 80 : num(widthV);
  const len = Array.from(text).length;
  const marg = width - len;
  if (marg <= 0) return str(text);
  const left = Math.floor(marg / 2) + (marg & width & 1);
  return str(" ".repeat(left) + text + " ".repeat(marg - left));
}

function truncate(all: Value[]): Value {
  const [s, [lengthV, killwords, endV, leewayV]] = params(all, [
    "length",
    "killwords",
    "end",
    "leeway",
  ]);
  const chars = s.type === "StringValue" ? Array.from(s.value as string) : [];
  const length = lengthV === undefined ? 255 : num(lengthV);
  const end = endV === undefined ? "..." : pyStr(endV);
  const leeway = leewayV === undefined || leewayV.type === "NullValue"
    ? 5
    : num(leewayV);
  const endLen = Array.from(end).length;
  if (length < endLen) {
    throw raised(`expected length >= ${endLen}, got ${length}`);
  }
  if (leeway < 0) throw raised(`expected leeway >= 0, got ${leeway}`);
  if (s.type !== "StringValue") {
    // jinja2 measures the operand itself: an Undefined has length 0, a
    // container short enough comes back whole, anything else has no len().
    const size = s.type === "UndefinedValue"
      ? 0
      : Array.isArray(s.value)
      ? s.value.length
      : s.value instanceof Map
      ? s.value.size
      : undefined;
    if (size !== undefined && size <= length + leeway) return s;
    throw new PyRaisedError(`cannot truncate a ${s.type}`);
  }
  if (chars.length <= length + leeway) return str(chars.join(""));
  const head = chars.slice(0, Math.max(0, length - endLen)).join("");
  if (flag(killwords)) return str(head + end);
  const cut = head.lastIndexOf(" ");
  return str((cut < 0 ? head : head.slice(0, cut)) + end);
}

function wordcount(all: Value[]): Value {
  const [s] = params(all, []);
  return int(pyStr(s).match(/[\p{L}\p{N}_]+/gu)?.length ?? 0);
}

function format(all: Value[]): Value {
  const [[s, ...args], kw] = splitArgs(all) as [[Value, ...Value[]], Kwargs];
  if (args.length > 0 && kw.size > 0) {
    throw raised(
      "can't handle positional and keyword arguments at the same time",
    );
  }
  return str(pyFormatPercent(pyStr(s), kw.size > 0 ? kw : args));
}

/** Python's `round(x, n)` with ties to even on the exact binary value. */
function pyRound(x: number, digits: number): number {
  if (!Number.isFinite(x) || digits > 20) return x;
  const scale = 10 ** digits;
  const fixed = Math.abs(x).toFixed(Math.min(100, Math.max(0, digits) + 30));
  const cut = fixed.indexOf(".") + (digits > 0 ? digits + 1 : 0);
  const tail = fixed.slice(cut + (digits > 0 ? 0 : 1));
  if (digits >= 0 && /^50*$/.test(tail)) {
    const down = Math.floor(Math.abs(x) * scale);
    const r = (down % 2 === 0 ? down : down + 1) / scale;
    return x < 0 ? -r : r;
  }
  if (digits < 0) {
    throw unsupported("round() to a negative precision");
  }
  const r = Number(Math.abs(x).toFixed(digits));
  return x < 0 ? -r : r;
}

function round(all: Value[]): Value {
  const [v, [precisionV, methodV]] = params(all, ["precision", "method"]);
  const precision = precisionV === undefined ? 0 : num(precisionV);
  const method = methodV === undefined ? "common" : pyStr(methodV);
  if (!isNumber(v)) {
    throw raised(`type ${v.type} doesn't define __round__`);
  }
  if (method === "common") {
    if (v.type !== "FloatValue") {
      return v.type === "BooleanValue" ? int(num(v)) : v;
    }
    return make("FloatValue", pyRound(num(v), precision));
  }
  const f = method === "ceil"
    ? Math.ceil
    : method === "floor"
    ? Math.floor
    : null;
  if (f === null) throw raised("method must be common, ceil or floor");
  const scale = 10 ** precision;
  return make("FloatValue", f(num(v) * scale) / scale);
}

function abs(all: Value[]): Value {
  const [v] = params(all, []);
  if (!isNumber(v)) {
    throw raised(`bad operand type for abs(): '${v.type}'`);
  }
  return make(
    v.type === "FloatValue" ? "FloatValue" : "IntegerValue",
    Math.abs(num(v)),
  );
}

function list(all: Value[]): Value {
  const [v] = params(all, []);
  return make("ArrayValue", [...itemsOf(v)]);
}

const INT_TEXT = /^[+-]?(?:\d(?:_?\d)*)$/;
const FLOAT_TEXT =
  /^[+-]?(?:(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?|inf(?:inity)?|nan)$/i;

function pyTrim(s: string): string {
  let a = 0, b = s.length;
  while (a < b && isPySpace(s[a]!)) a++;
  while (b > a && isPySpace(s[b - 1]!)) b--;
  return s.slice(a, b);
}

function parseFloatText(s: string): number | null {
  const t = pyTrim(s);
  if (!FLOAT_TEXT.test(t)) return null;
  const clean = t.replace(/_/g, "").toLowerCase();
  if (clean.endsWith("nan")) return NaN;
  if (clean.includes("inf")) {
    return clean.startsWith("-") ? -Infinity : Infinity;
  }
  return Number(clean);
}

function safeInt(n: number): Value {
  if (!Number.isSafeInteger(n)) throw unsupported("an integer beyond 2^53");
  return int(n === 0 ? 0 : n);
}

/** jinja2's Undefined fails `int()` and `float()`: the filters do not catch that. */
function definedNumberSource(v: Value, filter: string): void {
  if (v.type === "UndefinedValue") {
    throw new UndefinedUseError(`'${filter}' of an undefined value`);
  }
}

function toInt(all: Value[]): Value {
  const [v, [dflt, baseV]] = params(all, ["default", "base"]);
  definedNumberSource(v, "int");
  const fallback = dflt ?? int(0);
  if (baseV !== undefined && num(baseV) !== 10) {
    throw unsupported("int() in a base other than 10");
  }
  if (v.type === "StringValue") {
    const t = pyTrim(v.value as string);
    if (INT_TEXT.test(t)) return safeInt(Number(t.replace(/_/g, "")));
    const f = parseFloatText(v.value as string);
    if (f === null || Number.isNaN(f)) return fallback;
    if (!Number.isFinite(f)) {
      throw raised("cannot convert float infinity to integer");
    }
    return safeInt(Math.trunc(f));
  }
  if (isNumber(v)) {
    const n = num(v);
    if (Number.isNaN(n)) return fallback;
    if (!Number.isFinite(n)) {
      throw raised("cannot convert float infinity to integer");
    }
    return safeInt(Math.trunc(n));
  }
  return fallback;
}

function toFloat(all: Value[]): Value {
  const [v, [dflt]] = params(all, ["default"]);
  definedNumberSource(v, "float");
  if (isNumber(v)) return make("FloatValue", num(v));
  if (v.type === "StringValue") {
    const f = parseFloatText(v.value as string);
    if (f !== null) return make("FloatValue", f);
  }
  return dflt ?? make("FloatValue", 0);
}

/** jinja2's `attr`: the attribute only, never an item. */
function attr(all: Value[]): Value {
  const [v, [name]] = params(all, ["name"]);
  if (v.type === "UndefinedValue") {
    throw new UndefinedUseError(
      `'undefined' has no attribute '${pyStr(name!)}'`,
    );
  }
  const found = pyAttribute(v, pyStr(name!)) ?? UNDEFINED();
  // A Python method prints with its address: no text to match.
  if (found.type === "FunctionValue") {
    throw unsupported("attr() of a Python method");
  }
  return found;
}

function items(all: Value[]): Value {
  const [v] = params(all, []);
  if (v.type === "UndefinedValue") return iterator([]);
  if (!(v.value instanceof Map)) {
    throw raised("Can only get item pairs from a mapping.");
  }
  return iterator(
    Array.from(v.value as Map<string, Value>, ([k, x]) => tuple([str(k), x])),
  );
}

function reverse(all: Value[]): Value {
  const [v] = params(all, []);
  if (v.type === "StringValue") {
    return str(Array.from(v.value as string).reverse().join(""));
  }
  return iterator([...itemsOf(v)].reverse());
}

function first(all: Value[]): Value {
  const [v] = params(all, []);
  return itemsOf(v)[0] ?? UNDEFINED();
}

function last(all: Value[]): Value {
  const [v] = params(all, []);
  if (v.type === "IteratorValue") {
    throw raised("argument to reversed() must be a sequence");
  }
  return itemsOf(v).at(-1) ?? UNDEFINED();
}

/**
 * jinja2's `replace`: `str(s).replace(str(old), str(new), count)`, so None
 * prints as "None", an Undefined as "" and a number as its digits.
 */
function replace(all: Value[]): Value {
  const [s, [old, replacement, count]] = params(all, ["old", "new", "count"]);
  if (old === undefined || replacement === undefined) {
    throw raised("replace() needs 'old' and 'new'");
  }
  const limit = count === undefined || count.type === "NullValue"
    ? -1
    : num(count);
  return str(
    pyReplace(pyStr(s), pyStr(old), pyStr(replacement), limit),
  );
}

/** jinja2's `sort`: a stable sort, case-insensitive unless told, of any iterable. */
function sort(all: Value[]): Value {
  const [v, [reverse, cs, attribute]] = params(all, [
    "reverse",
    "case_sensitive",
    "attribute",
  ]);
  const key = attrGetter(attribute, { lower: !flag(cs) });
  return make("ArrayValue", sortStable(itemsOf(v), key, flag(reverse)));
}

/** The filters `map('name')` can apply, and that templates call by name. */
export function filterTable(
  own: ReadonlyMap<string, (args: Value[]) => Value>,
): Map<string, (args: Value[]) => Value> {
  const table = new Map<string, (args: Value[]) => Value>([
    ["dictsort", dictsort],
    ["items", items],
    ["selectattr", selectOrReject(true, true)],
    ["rejectattr", selectOrReject(false, true)],
    ["select", selectOrReject(true, false)],
    ["reject", selectOrReject(false, false)],
    ["wordcount", wordcount],
    ["center", center],
    ["format", format],
    ["truncate", truncate],
    ["groupby", groupby],
    ["sum", sum],
    ["max", minMax(1)],
    ["min", minMax(-1)],
    ["batch", batch],
    ["slice", sliceFilter],
    ["indent", indent],
    ["unique", unique],
    ["round", round],
    ["abs", abs],
    ["list", list],
    ["int", toInt],
    ["float", toFloat],
    ["attr", attr],
    ["reverse", reverse],
    ["first", first],
    ["last", last],
    ["replace", replace],
    ["sort", sort],
    ["e", (a) => str(htmlEscape(pyStr(params(a, [])[0])))],
    ["escape", (a) => str(htmlEscape(pyStr(params(a, [])[0])))],
    ["forceescape", (a) => str(htmlEscape(pyStr(params(a, [])[0])))],
    ["striptags", (a) => str(stripTags(pyStr(params(a, [])[0])))],
    ["lower", (a) => str(pyStr(params(a, [])[0]).toLowerCase())],
    ["upper", (a) => str(pyStr(params(a, [])[0]).toUpperCase())],
    ...own,
  ]);
  table.set("map", (all: Value[]): Value => {
    const [[seq, ...rest], kw] = splitArgs(all) as [
      [Value, ...Value[]],
      Kwargs,
    ];
    if (rest.length === 0) {
      const get = attrGetter(kw.get("attribute"), {
        default: kw.get("default"),
      });
      return iterator(itemsOf(seq).map(get));
    }
    const [name, ...args] = rest;
    const filter = table.get(pyStr(name!));
    if (filter === undefined) {
      throw JINJA2_FILTERS.has(pyStr(name!))
        ? unsupported(`the filter '${pyStr(name!)}'`)
        : raised(`No filter named '${pyStr(name!)}'`);
    }
    const tail = all.at(-1);
    const extra = tail?.type === "KeywordArgumentsValue" ? [tail] : [];
    return iterator(itemsOf(seq).map((v) => filter([v, ...args, ...extra])));
  });
  return table;
}
