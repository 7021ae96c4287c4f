// jinja2's filters and tests that @huggingface/jinja lacks or implements
// differently, with Python semantics (tuples, generators, ordering, equality).
import { Environment, Interpreter, parse, tokenize } from "@huggingface/jinja";
import { compareCodePoints, isPySpace } from "./_template_py.ts";
import { pyFormatPercent } from "./_template_format.ts";
import { make, pyRepr, pyStr, type Value } from "./_template_values.ts";

type Kwargs = Map<string, Value>;

/** jinja2 raised an `UndefinedError`: the server would reject the request. */
export class UndefinedUseError extends Error {
  /** @param message What was undefined. */
  constructor(message: string) {
    super(message);
    this.name = "UndefinedUseError";
  }
}

// TupleValue is not exported; evaluating a tuple literal hands one out.
const TupleClass = (() => {
  const env = new Environment();
  const node = parse(tokenize("{{ (1, 2) }}")).body[0] as never;
  return (new Interpreter(env).evaluate(node, env) as unknown as Value)
    .constructor as new (value: unknown) => Value;
})();

/** A Python tuple. */
export function tuple(items: Value[]): Value {
  return new TupleClass(items);
}

/** A Python iterator (generator, reversed list): iterable, but unprintable. */
export function iterator(items: Value[]): Value {
  const value = make("ArrayValue", items);
  value.type = "IteratorValue";
  // A Python generator object is true even when it would yield nothing.
  Object.defineProperty(value, "__bool__", {
    value: () => make("BooleanValue", true),
  });
  return value;
}

/** The items of an iterable value (iterating a mapping gives its keys). */
export function itemsOf(value: Value): Value[] {
  if (value.type === "UndefinedValue") return [];
  if (value.type === "StringValue") {
    return Array.from(value.value as string, (c) => make("StringValue", c));
  }
  if (Array.isArray(value.value)) return value.value as Value[];
  if (value.value instanceof Map) {
    return Array.from(value.value.keys(), (k) => make("StringValue", k));
  }
  throw new TypeError(`'${value.type}' object is not iterable`);
}

const str = (s: string): Value => make("StringValue", s);
const int = (n: number): Value => make("IntegerValue", n);
const UNDEFINED = (): Value => make("UndefinedValue", undefined);

function isNumber(v: Value): boolean {
  return v.type === "IntegerValue" || v.type === "FloatValue" ||
    v.type === "BooleanValue";
}

function num(v: Value): number {
  return v.type === "BooleanValue" ? (v.value ? 1 : 0) : v.value as number;
}

/** Python's `==`. */
export function pyEq(a: Value, b: Value): boolean {
  if (isNumber(a) && isNumber(b)) return num(a) === num(b);
  if (a.type === "StringValue" || b.type === "StringValue") {
    return a.type === b.type && a.value === b.value;
  }
  if (a.type === "NullValue" || b.type === "NullValue") {
    return a.type === b.type;
  }
  if (a.type === "UndefinedValue" || b.type === "UndefinedValue") {
    return a.type === b.type;
  }
  if (Array.isArray(a.value) && Array.isArray(b.value)) {
    if ((a.type === "TupleValue") !== (b.type === "TupleValue")) return false;
    const x = a.value as Value[], y = b.value as Value[];
    return x.length === y.length && x.every((v, i) => pyEq(v, y[i]!));
  }
  if (a.value instanceof Map && b.value instanceof Map) {
    const y = b.value as Map<string, Value>;
    if (a.value.size !== y.size) return false;
    for (const [k, v] of a.value as Map<string, Value>) {
      const w = y.get(k);
      if (w === undefined || !pyEq(v, w)) return false;
    }
    return true;
  }
  return a === b;
}

/** Python's ordering (`<`) as a comparator; raises where Python raises. */
export function pyCompare(a: Value, b: Value): number {
  if (isNumber(a) && isNumber(b)) return num(a) - num(b);
  if (a.type === "StringValue" && b.type === "StringValue") {
    return compareCodePoints(a.value as string, b.value as string);
  }
  if (
    Array.isArray(a.value) && Array.isArray(b.value) && a.type === b.type
  ) {
    const x = a.value as Value[], y = b.value as Value[];
    for (let i = 0; i < Math.min(x.length, y.length); i++) {
      if (!pyEq(x[i]!, y[i]!)) return pyCompare(x[i]!, y[i]!);
    }
    return x.length - y.length;
  }
  throw new TypeError(`'<' not supported between ${a.type} and ${b.type}`);
}

function lowered(v: Value): Value {
  return v.type === "StringValue" ? str((v.value as string).toLowerCase()) : v;
}

function truthy(v: Value): boolean {
  switch (v.type) {
    case "UndefinedValue":
    case "NullValue":
      return false;
    case "StringValue":
      return (v.value as string) !== "";
    case "IntegerValue":
    case "FloatValue":
    case "BooleanValue":
      return num(v) !== 0;
  }
  if (v.type === "IteratorValue") return true;
  if (Array.isArray(v.value)) return (v.value as Value[]).length > 0;
  if (v.value instanceof Map) return v.value.size > 0;
  return true;
}

/** `environment.getitem(obj, key)`: a missing key or index is undefined. */
export function getItem(obj: Value, key: string | number): Value {
  if (obj.type === "UndefinedValue") {
    throw new UndefinedUseError(`'undefined' has no attribute '${key}'`);
  }
  if (obj.value instanceof Map) {
    return (obj.value as Map<string, Value>).get(String(key)) ?? UNDEFINED();
  }
  if (
    typeof key === "number" &&
    (Array.isArray(obj.value) || obj.type === "StringValue")
  ) {
    const items = itemsOf(obj);
    return items.at(key) ?? UNDEFINED();
  }
  return UNDEFINED();
}

// jinja2's make_attrgetter: "a.b.0" walks items, digit parts are indices.
function attrGetter(
  attribute: Value | undefined,
  options: { lower?: boolean; default?: Value | undefined } = {},
): (v: Value) => Value {
  if (attribute === undefined || attribute.type === "NullValue") {
    return (v) => options.lower ? lowered(v) : v;
  }
  const parts = attribute.type === "IntegerValue"
    ? [attribute.value as number]
    : String(attribute.value).split(".").map((p) =>
      /^\d+$/.test(p) ? Number(p) : p
    );
  return (v) => {
    let item = v;
    for (const part of parts) {
      item = getItem(item, part);
      if (item.type === "UndefinedValue" && options.default !== undefined) {
        item = options.default;
        break;
      }
    }
    return options.lower ? lowered(item) : item;
  };
}

type Test = (v: Value, args: Value[]) => boolean;

const TESTS = new Map<string, Test>([
  ["defined", (v) => v.type !== "UndefinedValue"],
  ["undefined", (v) => v.type === "UndefinedValue"],
  ["none", (v) => v.type === "NullValue"],
  ["boolean", (v) => v.type === "BooleanValue"],
  ["true", (v) => v.type === "BooleanValue" && v.value === true],
  ["false", (v) => v.type === "BooleanValue" && v.value === false],
  ["integer", (v) => v.type === "IntegerValue"],
  ["float", (v) => v.type === "FloatValue"],
  ["number", isNumber],
  ["string", (v) => v.type === "StringValue"],
  ["mapping", (v) => v.value instanceof Map],
  [
    "sequence",
    // jinja2 asks for len() and __getitem__, which Undefined has too.
    (v) =>
      v.type === "StringValue" || v.value instanceof Map ||
      v.type === "UndefinedValue" ||
      (Array.isArray(v.value) && v.type !== "IteratorValue"),
  ],
  [
    "iterable",
    (v) =>
      v.type === "StringValue" || v.value instanceof Map ||
      v.type === "UndefinedValue" || Array.isArray(v.value),
  ],
  ["callable", (v) => v.type === "FunctionValue"],
  ["odd", (v) => oddEven(v) === 1],
  ["even", (v) => oddEven(v) === 0],
  ["divisibleby", (v, [n]) => mod(num(v), num(n!)) === 0],
  // str(value).islower() / .isupper(): a cased letter, none of the other case.
  ["lower", (v) => cased(pyStr(v), /\p{Lowercase}/u, /[\p{Uppercase}\p{Lt}]/u)],
  ["upper", (v) => cased(pyStr(v), /\p{Uppercase}/u, /[\p{Lowercase}\p{Lt}]/u)],
  ["in", (v, [seq]) => contains(seq!, v)],
  [
    "sameas",
    (v, [o]) =>
      v === o ||
      (v.type === o!.type && v.type !== "ArrayValue" &&
        v.type !== "ObjectValue" && v.value === o!.value &&
        (v.type === "NullValue" || v.type === "BooleanValue")),
  ],
]);
for (
  const [names, test] of [
    [["equalto", "eq", "=="], (a: Value, [b]: Value[]) => pyEq(a, b!)],
    [["ne", "!="], (a: Value, [b]: Value[]) => !pyEq(a, b!)],
    [
      ["gt", "greaterthan", ">"],
      (a: Value, [b]: Value[]) => pyCompare(a, b!) > 0,
    ],
    [["ge", ">="], (a: Value, [b]: Value[]) => pyCompare(a, b!) >= 0],
    [["lt", "lessthan", "<"], (a: Value, [b]: Value[]) => pyCompare(a, b!) < 0],
    [["le", "<="], (a: Value, [b]: Value[]) => pyCompare(a, b!) <= 0],
  ] as const
) {
  for (const name of names) TESTS.set(name, test);
}

/** The named test (`x is name`); raises for names jinja2 lacks. */
export function testNamed(name: string): Test {
  const test = TESTS.get(name);
  if (test === undefined) throw new Error(`No test named '${name}'`);
  return test;
}

function cased(text: string, want: RegExp, other: RegExp): boolean {
  return want.test(text) && !other.test(text);
}

function mod(a: number, b: number): number {
  if (b === 0) throw new RangeError("integer division or modulo by zero");
  return ((a % b) + b) % b;
}

function oddEven(v: Value): number {
  if (!isNumber(v)) throw new TypeError("odd/even of a non-number");
  return mod(num(v), 2);
}

function contains(seq: Value, v: Value): boolean {
  if (seq.type === "StringValue") {
    if (v.type !== "StringValue") {
      throw new TypeError("'in <string>' requires string");
    }
    return (seq.value as string).includes(v.value as string);
  }
  if (seq.value instanceof Map) {
    return v.type === "StringValue" && seq.value.has(v.value as string);
  }
  return itemsOf(seq).some((x) => pyEq(x, v));
}

function selectOrReject(select: boolean, byAttr: boolean) {
  return (all: Value[]): Value => {
    const [[seq, ...rest]] = splitArgs(all) as [[Value, ...Value[]], Kwargs];
    let getter = (v: Value) => v;
    let args = rest;
    if (byAttr) {
      const attr = rest[0];
      if (attr === undefined) {
        throw new TypeError("Missing parameter for attribute name");
      }
      getter = attrGetter(attr);
      args = rest.slice(1);
    }
    const [name, ...testArgs] = args;
    let pass: (v: Value) => boolean;
    if (name === undefined) pass = truthy;
    else {
      const test = TESTS.get(String(name.value));
      if (test === undefined) throw new Error(`No test named '${name.value}'`);
      pass = (v) => test(v, testArgs);
    }
    return iterator(itemsOf(seq).filter((v) => pass(getter(v)) === select));
  };
}

/** Splits trailing keyword arguments off a call's arguments. */
export function splitArgs(args: Value[]): [Value[], Kwargs] {
  const last = args.at(-1);
  if (last?.type === "KeywordArgumentsValue") {
    return [args.slice(0, -1), last.value as Kwargs];
  }
  return [args, new Map()];
}

// Reads Python-style parameters: positional first, then by keyword.
function params(
  all: Value[],
  names: readonly string[],
): [Value, (Value | undefined)[]] {
  const [[operand, ...rest], kw] = splitArgs(all) as [
    [Value, ...Value[]],
    Kwargs,
  ];
  for (const k of kw.keys()) {
    if (!names.includes(k)) {
      throw new TypeError(`unexpected keyword argument '${k}'`);
    }
  }
  if (rest.length > names.length) throw new TypeError("too many arguments");
  return [operand, names.map((n, i) => rest[i] ?? kw.get(n))];
}

function flag(v: Value | undefined, fallback = false): boolean {
  return v === undefined ? fallback : truthy(v);
}

function dictsort(all: Value[]): Value {
  const [d, [cs, by, reverse]] = params(all, [
    "case_sensitive",
    "by",
    "reverse",
  ]);
  if (!(d.value instanceof Map)) {
    throw new TypeError("dictsort expects a mapping");
  }
  const pos = by === undefined || by.value === "key"
    ? 0
    : by.value === "value"
    ? 1
    : (() => {
      throw new Error("You can only sort by either 'key' or 'value'");
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
      const t = tuple([grouper, list]);
      Object.defineProperty(t, "builtins", {
        value: new Map([["grouper", grouper], ["list", list]]),
      });
      return t;
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
  throw new TypeError(
    `unsupported operand types for +: ${a.type} and ${b.type}`,
  );
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
  if (!(n > 0)) throw new RangeError("batch size must be positive");
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
        throw new TypeError(`unhashable type: '${k.type}'`);
      })());
    if (!seen.has(h)) {
      seen.add(h);
      out.push(item);
    }
  }
  return iterator(out);
}

/** Python's `str.splitlines()`. */
export function pySplitlines(text: string): string[] {
  // Python's line boundaries include the file/group/record separators.
  // deno-lint-ignore no-control-regex
  const lines = text.split(/\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/);
  if (lines.at(-1) === "") lines.pop();
  return lines;
}

function indent(all: Value[]): Value {
  const [s, [width, first, blank]] = params(all, ["width", "first", "blank"]);
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
  const chars = Array.from(pyStr(s));
  const length = lengthV === undefined ? 255 : num(lengthV);
  const end = endV === undefined ? "..." : pyStr(endV);
  const leeway = leewayV === undefined || leewayV.type === "NullValue"
    ? 5
    : num(leewayV);
  const endLen = Array.from(end).length;
  if (length < endLen) {
    throw new RangeError(`expected length >= ${endLen}, got ${length}`);
  }
  if (leeway < 0) throw new RangeError(`expected leeway >= 0, got ${leeway}`);
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
    throw new TypeError(
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
    throw new RangeError("negative round precision is not supported");
  }
  const r = Number(Math.abs(x).toFixed(digits));
  return x < 0 ? -r : r;
}

function round(all: Value[]): Value {
  const [v, [precisionV, methodV]] = params(all, ["precision", "method"]);
  const precision = precisionV === undefined ? 0 : num(precisionV);
  const method = methodV === undefined ? "common" : pyStr(methodV);
  if (!isNumber(v)) {
    throw new TypeError(`type ${v.type} doesn't define __round__`);
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
  if (f === null) throw new TypeError("method must be common, ceil or floor");
  const scale = 10 ** precision;
  return make("FloatValue", f(num(v) * scale) / scale);
}

function abs(all: Value[]): Value {
  const [v] = params(all, []);
  if (!isNumber(v)) {
    throw new TypeError(`bad operand type for abs(): '${v.type}'`);
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
  if (!Number.isSafeInteger(n)) throw new RangeError("integer out of range");
  return int(n === 0 ? 0 : n);
}

function toInt(all: Value[]): Value {
  const [v, [dflt, baseV]] = params(all, ["default", "base"]);
  const fallback = dflt ?? int(0);
  if (baseV !== undefined && num(baseV) !== 10) {
    throw new RangeError("int base other than 10 is not supported");
  }
  if (v.type === "StringValue") {
    const t = pyTrim(v.value as string);
    if (INT_TEXT.test(t)) return safeInt(Number(t.replace(/_/g, "")));
    const f = parseFloatText(v.value as string);
    if (f === null || Number.isNaN(f)) return fallback;
    if (!Number.isFinite(f)) {
      throw new RangeError("cannot convert float infinity to integer");
    }
    return safeInt(Math.trunc(f));
  }
  if (isNumber(v)) {
    const n = num(v);
    if (Number.isNaN(n)) return fallback;
    if (!Number.isFinite(n)) {
      throw new RangeError("cannot convert float infinity to integer");
    }
    return safeInt(Math.trunc(n));
  }
  return fallback;
}

function toFloat(all: Value[]): Value {
  const [v, [dflt]] = params(all, ["default"]);
  if (isNumber(v)) return make("FloatValue", num(v));
  if (v.type === "StringValue") {
    const f = parseFloatText(v.value as string);
    if (f !== null) return make("FloatValue", f);
  }
  return dflt ?? make("FloatValue", 0);
}

function attr(all: Value[]): Value {
  const [v, [name]] = params(all, ["name"]);
  if (v.type === "UndefinedValue") {
    throw new UndefinedUseError(
      `'undefined' has no attribute '${pyStr(name!)}'`,
    );
  }
  if (
    v.type === "NullValue" || isNumber(v) || v.value instanceof Map ||
    Array.isArray(v.value) || v.type === "StringValue"
  ) {
    // Mappings hold items, not attributes; attributes left are Python
    // methods, whose printed form we cannot reproduce.
    if (v.builtins.has(pyStr(name!))) {
      throw new Error("attr() of a Python method is not supported");
    }
    return UNDEFINED();
  }
  return UNDEFINED();
}

function items(all: Value[]): Value {
  const [v] = params(all, []);
  if (v.type === "UndefinedValue") return iterator([]);
  if (!(v.value instanceof Map)) {
    throw new TypeError("Can only get item pairs from a mapping.");
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
    throw new TypeError("argument to reversed() must be a sequence");
  }
  return itemsOf(v).at(-1) ?? UNDEFINED();
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
      throw new Error(`No filter named '${pyStr(name!)}'`);
    }
    const tail = all.at(-1);
    const extra = tail?.type === "KeywordArgumentsValue" ? [tail] : [];
    return iterator(itemsOf(seq).map((v) => filter([v, ...args, ...extra])));
  });
  return table;
}
