// jinja2's attribute and item lookup in the immutable sandbox, over the
// values templates see: `x.name` asks Python's attribute first, then the
// item; `x[key]` asks the item first, then (for a string key) the
// attribute. A Python method found this way is a value of its own; the
// sandbox hides the methods that modify (`dict.update`, `list.append`),
// which then act as an Undefined (calling one raises).
import { isMutable, isNamespace } from "./loop_fields.ts";
import {
  isNumber,
  raised,
  splitArgs,
  tuple,
  tupleAttributes,
  UNDEFINED,
  unsupported,
} from "./objects.ts";
import { STRING_METHODS } from "./str.ts";
import { fn, make, type Value } from "./values.ts";

/** Python's `str` methods. */
const STR_METHODS: ReadonlySet<string> = new Set([
  "capitalize",
  "casefold",
  "center",
  "count",
  "encode",
  "endswith",
  "expandtabs",
  "find",
  "format",
  "format_map",
  "index",
  "isalnum",
  "isalpha",
  "isascii",
  "isdecimal",
  "isdigit",
  "isidentifier",
  "islower",
  "isnumeric",
  "isprintable",
  "isspace",
  "istitle",
  "isupper",
  "join",
  "ljust",
  "lower",
  "lstrip",
  "maketrans",
  "partition",
  "removeprefix",
  "removesuffix",
  "replace",
  "rfind",
  "rindex",
  "rjust",
  "rpartition",
  "rsplit",
  "rstrip",
  "split",
  "splitlines",
  "startswith",
  "strip",
  "swapcase",
  "title",
  "translate",
  "upper",
  "zfill",
]);

/** The sandbox's modifying methods: an Undefined that raises when used. */
const UNSAFE: Readonly<Record<string, ReadonlySet<string>>> = {
  dict: new Set(["clear", "pop", "popitem", "setdefault", "update"]),
  list: new Set([
    "append",
    "clear",
    "extend",
    "insert",
    "pop",
    "remove",
    "reverse",
    "sort",
  ]),
};

const LIST_METHODS: ReadonlySet<string> = new Set(["copy", "count", "index"]);
const TUPLE_METHODS: ReadonlySet<string> = new Set(["count", "index"]);
const NUMBER_ATTRIBUTES: ReadonlySet<string> = new Set([
  "real",
  "imag",
  "numerator",
  "denominator",
  "conjugate",
  "bit_length",
  "bit_count",
  "to_bytes",
  "from_bytes",
  "as_integer_ratio",
  "is_integer",
  "hex",
  "fromhex",
]);
const MACRO_ATTRIBUTES: ReadonlySet<string> = new Set([
  "name",
  "arguments",
  "defaults",
  "catch_kwargs",
  "catch_varargs",
  "caller",
]);

/** A Python method the renderer does not model: only calling or printing it fails. */
function opaqueMethod(owner: string, name: string): Value {
  return fn(() => {
    throw unsupported(`${owner}.${name}()`);
  });
}

type Entries = Map<string, Value>;

/** `dict.items()`, `keys()` or `values()` of a mapping's entries. */
export function dictView(
  entries: Entries,
  kind: "dict_items" | "dict_keys" | "dict_values",
): Value {
  const items = Array.from(
    entries,
    ([k, v]) =>
      kind === "dict_items"
        ? tuple([make("StringValue", k), v])
        : kind === "dict_keys"
        ? make("StringValue", k)
        : v,
  );
  return make(kind, items);
}

/** A dict's safe methods, as values. */
function dictMethod(dict: Value, name: string): Value | undefined {
  const entries = dict.value as Entries;
  switch (name) {
    case "items":
    case "keys":
    case "values":
      return fn(() => dictView(entries, `dict_${name}`));
    case "get":
      return fn((args) => {
        const positional = args.filter((a) =>
          a.type !== "KeywordArgumentsValue"
        );
        const [key, fallback] = positional;
        if (key === undefined || positional.length > 2) {
          throw raised("get expected 1 or 2 arguments");
        }
        if (key.value instanceof Map || key.type === "ArrayValue") {
          throw raised("unhashable type");
        }
        const found = key.type === "StringValue"
          ? entries.get(key.value as string)
          : undefined;
        return found ?? fallback ?? make("NullValue", null);
      });
    case "copy":
      return fn(() => make("ObjectValue", new Map(entries)));
    case "fromkeys":
      return opaqueMethod("dict", name);
  }
  return undefined;
}

/** `object.name` as jinja2's sandboxed `getattr` gives it. */
export function pyGetAttr(object: Value, name: string): Value {
  const found = pyAttribute(object, name);
  if (found !== undefined) return found;
  // A dict without such an attribute: its item.
  return (object.value as Entries).get(name) ?? UNDEFINED();
}

/**
 * Python's own attribute `object.name`, never an item of a mapping (the
 * `attr` filter's lookup); `undefined` for a mapping without it.
 */
export function pyAttribute(object: Value, name: string): Value | undefined {
  const held = object.value;
  if (held instanceof Map) {
    // A namespace's attributes and `loop`'s fields are their entries.
    if (isMutable(object)) {
      const entry = (held as Entries).get(name);
      if (entry !== undefined) return entry;
      if (name === "changed" && !isNamespace(object)) {
        throw unsupported("loop.changed()");
      }
      return UNDEFINED();
    }
    const method = dictMethod(object, name);
    if (method !== undefined) return method;
    return UNSAFE["dict"]!.has(name) ? UNDEFINED() : undefined;
  }
  switch (object.type) {
    case "StringValue": {
      if (!STR_METHODS.has(name)) return UNDEFINED();
      const body = STRING_METHODS.get(name);
      if (body === undefined) return opaqueMethod("str", name);
      const text = object.value as string;
      return fn((args) => body(text, ...splitArgs(args)));
    }
    case "ArrayValue":
      return LIST_METHODS.has(name) ? opaqueMethod("list", name) : UNDEFINED();
    case "TupleValue": {
      // groupby's tuples carry `grouper` and `list`.
      const own = tupleAttributes(object)?.get(name);
      if (own !== undefined) return own;
      return TUPLE_METHODS.has(name)
        ? opaqueMethod("tuple", name)
        : UNDEFINED();
    }
    case "FunctionValue":
      if (MACRO_ATTRIBUTES.has(name)) {
        throw unsupported(`the attribute '${name}' of a macro or function`);
      }
      return UNDEFINED();
  }
  if (isNumber(object) && NUMBER_ATTRIBUTES.has(name)) {
    throw unsupported(`the attribute '${name}' of a number`);
  }
  return UNDEFINED();
}

/** `object[key]` as jinja2's sandboxed `getitem` gives it (slices aside). */
export function pyGetItem(object: Value, key: Value): Value {
  const held = object.value;
  if (held instanceof Map) {
    if (key.type !== "StringValue") return UNDEFINED();
    return (held as Entries).get(key.value as string) ??
      pyGetAttr(object, key.value as string);
  }
  const indexable = object.type === "StringValue" ||
    object.type === "ArrayValue" || object.type === "TupleValue";
  if (
    indexable && (key.type === "IntegerValue" || key.type === "BooleanValue")
  ) {
    if (typeof key.value === "bigint") return UNDEFINED();
    const index = Number(key.value);
    if (object.type === "StringValue") {
      const chars = Array.from(object.value as string);
      const ch = chars.at(index);
      return index >= -chars.length && ch !== undefined
        ? make("StringValue", ch)
        : UNDEFINED();
    }
    const items = held as Value[];
    return index >= -items.length
      ? items.at(index) ?? UNDEFINED()
      : UNDEFINED();
  }
  return key.type === "StringValue"
    ? pyGetAttr(object, key.value as string)
    : UNDEFINED();
}

/** A slice bound: a number, or null where Python reads None. */
function bound(value: Value | null): number | null {
  if (value === null || value.type === "NullValue") return null;
  if (value.type === "IntegerValue" || value.type === "BooleanValue") {
    if (typeof value.value === "bigint") {
      throw unsupported("a slice bound beyond 2^53");
    }
    return Number(value.value);
  }
  throw raised(
    "slice indices must be integers or None or have an __index__ method",
  );
}

/** Python's `sequence[start:stop:step]`. */
export function pySlice(
  object: Value,
  start: Value | null,
  stop: Value | null,
  step: Value | null,
): Value {
  const text = object.type === "StringValue";
  if (!text && object.type !== "ArrayValue" && object.type !== "TupleValue") {
    throw raised(`'${object.type}' object is not subscriptable`);
  }
  const items: unknown[] = text
    ? Array.from(object.value as string)
    : object.value as Value[];
  const n = items.length;
  const by = bound(step) ?? 1;
  if (by === 0) throw raised("slice step cannot be zero");
  const clamp = (value: number | null, fallback: number): number => {
    if (value === null) return fallback;
    if (value < 0) value += n;
    return by > 0
      ? Math.min(Math.max(value, 0), n)
      : Math.min(Math.max(value, -1), n - 1);
  };
  const from = clamp(bound(start), by > 0 ? 0 : n - 1);
  const to = clamp(bound(stop), by > 0 ? n : -1);
  const out: unknown[] = [];
  for (let i = from; by > 0 ? i < to : i > to; i += by) out.push(items[i]);
  if (text) return make("StringValue", out.join(""));
  return object.type === "TupleValue"
    ? tuple(out as Value[])
    : make("ArrayValue", out);
}
