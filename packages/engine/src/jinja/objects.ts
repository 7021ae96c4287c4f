// Python objects as jinja2 templates see them: tuples, generators, equality
// and ordering, item lookup, and the way filters read their arguments.
import { compareCodePoints } from "./py.ts";
import { make, type Value } from "./values.ts";

export type Kwargs = Map<string, Value>;

export {
  PyRaisedError,
  raised,
  UndefinedUseError,
  unsupported,
  UnsupportedError,
} from "./errors.ts";
import { raised, UndefinedUseError } from "./errors.ts";

/** A Python tuple. */
export function tuple(items: Value[]): Value {
  return make("TupleValue", items);
}

/** The attributes of groupby's tuples besides their items (`grouper`, `list`). */
const groupAttributes = new WeakMap<Value, ReadonlyMap<string, Value>>();

/** A tuple with named attributes: one of groupby's `(grouper, list)`. */
export function namedTuple(
  items: Value[],
  attributes: ReadonlyMap<string, Value>,
): Value {
  const value = tuple(items);
  groupAttributes.set(value, attributes);
  return value;
}

/** A {@linkcode namedTuple}'s attributes. */
export function tupleAttributes(
  value: Value,
): ReadonlyMap<string, Value> | undefined {
  return groupAttributes.get(value);
}

/** A Python iterator (generator, reversed list): iterable, but unprintable. */
export function iterator(items: Value[]): Value {
  return make("IteratorValue", items);
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
  throw raised(`'${value.type}' object is not iterable`);
}

export const str = (s: string): Value => make("StringValue", s);
export const int = (n: number): Value => make("IntegerValue", n);
export const UNDEFINED = (): Value => make("UndefinedValue", undefined);

export function isNumber(v: Value): boolean {
  return v.type === "IntegerValue" || v.type === "FloatValue" ||
    v.type === "BooleanValue";
}

export function num(v: Value): number {
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
  throw raised(`'<' not supported between ${a.type} and ${b.type}`);
}

export function lowered(v: Value): Value {
  return v.type === "StringValue" ? str((v.value as string).toLowerCase()) : v;
}

/** Python's `bool()` of a value, as `if`, `and`, `or` and `not` read it. */
export function truthy(v: Value): boolean {
  switch (v.type) {
    case "UndefinedValue":
    case "NullValue":
      return false;
    case "BooleanValue":
      return v.value as boolean;
    case "StringValue":
      return (v.value as string) !== "";
    case "IntegerValue":
    case "FloatValue":
      // A bigint beyond 2^53 is never zero.
      return v.value !== 0;
    // A generator, a namespace and a function are objects: true even when
    // empty.
    case "IteratorValue":
    case "NamespaceValue":
    case "FunctionValue":
      return true;
  }
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
export function attrGetter(
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

/** Splits trailing keyword arguments off a call's arguments. */
export function splitArgs(args: Value[]): [Value[], Kwargs] {
  const last = args.at(-1);
  if (last?.type === "KeywordArgumentsValue") {
    return [args.slice(0, -1), last.value as Kwargs];
  }
  return [args, new Map()];
}

// Reads Python-style parameters: positional first, then by keyword.
export function params(
  all: Value[],
  names: readonly string[],
): [Value, (Value | undefined)[]] {
  const [[operand, ...rest], kw] = splitArgs(all) as [
    [Value, ...Value[]],
    Kwargs,
  ];
  for (const k of kw.keys()) {
    if (!names.includes(k)) {
      throw raised(`unexpected keyword argument '${k}'`);
    }
  }
  if (rest.length > names.length) throw raised("too many arguments");
  return [operand, names.map((n, i) => rest[i] ?? kw.get(n))];
}

export function flag(v: Value | undefined, fallback = false): boolean {
  return v === undefined ? fallback : truthy(v);
}
