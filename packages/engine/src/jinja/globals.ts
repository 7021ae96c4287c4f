// The globals a rewritten template calls: Python semantics for printing,
// string methods and filters, plus transformers' template globals.
import {
  CALLABLE,
  CONCAT,
  EQUALS,
  ITERABLE,
  MISSING_FILTER,
  PRINT,
  TEST,
  UNPACK,
} from "./ast.ts";
import { filterTable } from "./filters.ts";
import {
  itemsOf,
  pyEq,
  raised,
  tuple,
  UndefinedUseError,
  unsupported,
} from "./objects.ts";
import { isMutable } from "./memo.ts";
import { JINJA2_FILTERS } from "./names.ts";
import { testNamed } from "./tests.ts";
import { pyStrFormat } from "./format.ts";
import { STRING_METHODS } from "./str.ts";
import {
  BOTH,
  LEFT,
  pyCapitalize,
  pySplit,
  pyStrip,
  pyTitleFilter,
  pyTitleMethod,
  RIGHT,
  type StripEnds,
} from "./py.ts";
import { strftime } from "./strftime.ts";
import { fn, make, pyJsonDumps, pyStr, type Value } from "./values.ts";

/** What the globals need from the caller. */
export interface GlobalsOptions {
  readonly now: () => Date;
  readonly raise: (message: string) => never;
}

type Kwargs = Map<string, Value>;

function split(args: Value[]): [Value[], Kwargs] {
  const last = args.at(-1);
  if (last?.type === "KeywordArgumentsValue") {
    return [args.slice(0, -1), last.value as Kwargs];
  }
  return [args, new Map()];
}

function str(value: string): Value {
  return make("StringValue", value);
}

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

/** Python lists and tuples have these two of the rewritten methods. */
const SEQUENCE_METHODS: ReadonlyMap<
  string,
  (items: Value[], args: Value[]) => Value
> = new Map([
  ["count", (items, [x]) => {
    if (x === undefined) throw raised("count() takes exactly one argument");
    return make("IntegerValue", items.filter((v) => pyEq(v, x)).length);
  }],
  ["index", (items, [x]) => {
    if (x === undefined) throw raised("index expected at least 1 argument");
    const at = items.findIndex((v) => pyEq(v, x));
    if (at < 0) throw raised("x not in list");
    return make("IntegerValue", at);
  }],
]);

/**
 * A method called by name (see ast.ts), as jinja2 finds it: Python's
 * method of a string, list or tuple receiver; `other`'s of a dict; a
 * mapping's item holding a macro. Anything else has no such attribute, and
 * calling the Undefined jinja2 gives for it raises.
 */
function method(
  name: string,
  onString: (text: string, args: Value[], kw: Kwargs) => Value,
  other?: (self: Value) => Value | null,
) {
  return fn((all) => {
    const [self, ...rest] = all as [Value, ...Value[]];
    if (self.type === "StringValue") {
      const [args, kw] = split(rest);
      return onString(self.value as string, args, kw);
    }
    const own = other?.(self);
    if (own) return (own.value as (args: Value[]) => Value)(rest);
    const member = self.value instanceof Map ? self.value.get(name) : undefined;
    if (member?.type === "FunctionValue") {
      return (member.value as (args: Value[]) => Value)(rest);
    }
    const sequence = SEQUENCE_METHODS.get(name);
    if (
      sequence !== undefined &&
      (self.type === "ArrayValue" || self.type === "TupleValue")
    ) {
      return sequence(self.value as Value[], split(rest)[0]);
    }
    throw new UndefinedUseError(
      `'${self.type}' object has no attribute '${name}'`,
    );
  });
}

function strip(ends: StripEnds) {
  return (text: string, args: Value[], kw: Kwargs) =>
    str(pyStrip(text, optionalString(args[0] ?? kw.get("chars")), ends));
}

function tojson(args: Value[]): Value {
  const [[operand, ...rest], kw] = split(args) as [[Value, ...Value[]], Kwargs];
  const get = (name: string, i: number) => rest[i] ?? kw.get(name);
  const indent = get("indent", 1);
  const separators = get("separators", 3);
  const sortKeys = get("sort_keys", 4);
  const pair = separators?.value as Value[] | null | undefined;
  return str(pyJsonDumps(operand, {
    ensureAscii: Boolean(get("ensure_ascii", 0)?.value),
    indent: (indent?.value ?? null) as number | string | null,
    separators: Array.isArray(pair)
      ? [pair[0]!.value as string, pair[1]!.value as string]
      : null,
    sortKeys: Boolean(sortKeys?.value),
  }));
}

function length(args: Value[]): Value {
  const value = args[0]!;
  if (value.type === "StringValue") {
    return make("IntegerValue", Array.from(value.value as string).length);
  }
  const items = value.value;
  if (value.type === "UndefinedValue") return make("IntegerValue", 0);
  if (value.type === "IteratorValue") {
    throw raised("object of type 'generator' has no len()");
  }
  if (Array.isArray(items)) return make("IntegerValue", items.length);
  if (items instanceof Map) return make("IntegerValue", items.size);
  throw raised(`object of type '${value.type}' has no len()`);
}

function join(args: Value[]): Value {
  const [[operand, separator], kw] = split(args) as [[Value, Value?], Kwargs];
  // jinja2 reads the separator with str(), as it reads the items.
  const d = separator ?? kw.get("d");
  const sep = d === undefined ? "" : pyStr(d);
  const items = operand.type === "StringValue"
    ? Array.from(operand.value as string)
    : itemsOf(operand).map(pyStr);
  return str(items.join(sep));
}

/** The longest range jinja2's sandbox makes. */
const MAX_RANGE = 100_000;

function range(args: Value[]): Value {
  if (
    args.length === 0 || args.length > 3 ||
    args.some((a) => a.type !== "IntegerValue" && a.type !== "BooleanValue")
  ) {
    throw raised("range() takes one to three integers");
  }
  const n = args.map((a) => Number(a.value));
  const [start, stop, step] = n.length === 1
    ? [0, n[0]!, 1]
    : [n[0]!, n[1]!, n[2] ?? 1];
  if (step === 0) throw raised("range() arg 3 must not be zero");
  if (Math.max(0, Math.ceil((stop - start) / step)) > MAX_RANGE) {
    throw raised(
      "Range too big. The sandbox blocks ranges larger than MAX_RANGE",
    );
  }
  const out: Value[] = [];
  for (let i = start; step > 0 ? i < stop : i > stop; i += step) {
    out.push(make("IntegerValue", i));
  }
  return make("ArrayValue", out);
}

// jinja2's default globals that @huggingface/jinja lacks (`dict` is ours).
const JINJA2_GLOBALS = new Set(["cycler", "joiner", "lipsum"]);

// Python's `dict(mapping?, **kwargs)`.
function dict(args: Value[]): Value {
  const [positional, kw] = split(args);
  if (positional.length > 1) {
    throw raised("dict expected at most 1 argument");
  }
  const out = new Map<string, Value>();
  const first = positional[0];
  if (first !== undefined) {
    if (!(first.value instanceof Map)) {
      throw unsupported("dict() of pairs");
    }
    for (const [k, v] of first.value as Map<string, Value>) out.set(k, v);
  }
  for (const [k, v] of kw) out.set(k, v);
  return make("ObjectValue", out);
}

/** Builds the global variables of a render. */
export function globalsFor(options: GlobalsOptions): Map<string, Value> {
  const text = (f: (s: string) => string) => (t: string) => str(f(t));
  // jinja2's text filters read their operand with str(): None is "None",
  // an Undefined "", a number its digits.
  const filterOnText =
    (f: (s: string, args: Value[], kw: Kwargs) => Value) =>
    (all: Value[]): Value => {
      const [self, ...rest] = all as [Value, ...Value[]];
      const [args, kw] = split(rest);
      return f(pyStr(self), args, kw);
    };
  const own = new Map<string, (args: Value[]) => Value>([
    ["tojson", tojson],
    ["trim", filterOnText(strip(BOTH))],
    ["title", filterOnText(text(pyTitleFilter))],
    ["capitalize", filterOnText(text(pyCapitalize))],
    ["length", length],
    ["count", length],
    ["string", ([v]) => str(pyStr(v!))],
    ["join", join],
  ]);
  const filters = filterTable(own);
  const view = (name: string, kind: string, pairs: boolean) =>
    method(name, () => {
      throw new UndefinedUseError(`'str' object has no attribute '${name}'`);
    }, (self) => {
      // A namespace or `loop` has no dict methods.
      if (!(self.value instanceof Map) || isMutable(self)) return null;
      const entries = Array.from(self.value as Map<string, Value>);
      const items = entries.map(([k, v]) =>
        kind === "dict_items" ? tuple([str(k), v]) : pairs ? str(k) : v
      );
      const result = make("ArrayValue", items);
      result.type = kind;
      return fn(() => result);
    });
  return new Map<string, Value>([
    ...Array.from(
      filters,
      ([name, f]) => [`__ic_filter_${name}`, fn(f)] as [string, Value],
    ),
    [
      CALLABLE,
      fn(([v, name]) => {
        if (v!.type !== "UndefinedValue") return v!;
        if (JINJA2_GLOBALS.has(name!.value as string)) {
          // jinja2 has it and the server would render: we cannot, so the
          // count fails rather than reporting a rejection.
          throw unsupported(`${name!.value}()`);
        }
        throw new UndefinedUseError("an undefined value is not callable");
      }),
    ],
    [
      ITERABLE,
      fn(([v]) => v!.type === "UndefinedValue" ? make("ArrayValue", []) : v!),
    ],
    [
      UNPACK,
      fn(([v]) => {
        if (v!.type === "UndefinedValue") return make("ArrayValue", []);
        if (!Array.isArray(v!.value)) return v!;
        // @huggingface/jinja unpacks only values typed "ArrayValue".
        return make(
          "ArrayValue",
          (v!.value as Value[]).map((x) =>
            Array.isArray(x.value) && x.type !== "ArrayValue"
              ? make("ArrayValue", x.value)
              : x
          ),
        );
      }),
    ],
    [EQUALS, fn(([a, b]) => make("BooleanValue", pyEq(a!, b!)))],
    [
      MISSING_FILTER,
      fn(([, name]) => {
        const filter = name!.value as string;
        throw JINJA2_FILTERS.has(filter)
          ? unsupported(`the filter '${filter}'`)
          : raised(`No filter named '${filter}' found.`);
      }),
    ],
    ...Array.from(
      STRING_METHODS,
      ([name, body]) =>
        [`__ic_method_${name}`, method(name, body)] as [string, Value],
    ),
    [
      TEST,
      fn(([v, name]) =>
        make("BooleanValue", testNamed(name!.value as string)(v!, []))
      ),
    ],
    ["__ic_not", fn(([v]) => make("BooleanValue", !v!.value))],
    ["__ic_method_items", view("items", "dict_items", true)],
    ["__ic_method_keys", view("keys", "dict_keys", true)],
    ["__ic_method_values", view("values", "dict_values", false)],
    [
      "__ic_method_format",
      method("format", (t, args, kw) => str(pyStrFormat(t, args, kw))),
    ],
    ["true", make("BooleanValue", true)],
    ["false", make("BooleanValue", false)],
    ["none", make("NullValue", null)],
    ["True", make("BooleanValue", true)],
    ["False", make("BooleanValue", false)],
    ["None", make("NullValue", null)],
    ["range", fn(range)],
    ["dict", fn(dict)],
    [
      "raise_exception",
      fn(([m]) => options.raise(m === undefined ? "" : pyStr(m))),
    ],
    [
      "strftime_now",
      fn(([f]) => str(strftime(options.now(), String(f?.value ?? "")))),
    ],
    [PRINT, fn(([v]) => str(pyStr(v!)))],
    [CONCAT, fn(([a, b]) => str(pyStr(a!) + pyStr(b!)))],
    ["__ic_method_strip", method("strip", strip(BOTH))],
    ["__ic_method_lstrip", method("lstrip", strip(LEFT))],
    ["__ic_method_rstrip", method("rstrip", strip(RIGHT))],
    [
      "__ic_method_split",
      method("split", (t, args, kw) => {
        const sep = optionalString(args[0] ?? kw.get("sep"));
        const max = (args[1] ?? kw.get("maxsplit"))?.value as
          | number
          | undefined;
        return make("ArrayValue", pySplit(t, sep, max ?? -1).map(str));
      }),
    ],
    ["__ic_method_title", method("title", text(pyTitleMethod))],
    ["__ic_method_capitalize", method("capitalize", text(pyCapitalize))],
  ]);
}
