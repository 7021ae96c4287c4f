// The values a template sees: Python's types over JavaScript values, keeping
// what Python would keep (object key order, integral floats).
import { compareCodePoints, pyFloatRepr, pyStrRepr } from "./py.ts";
import { raised, unsupported } from "./errors.ts";

/** The Python type a {@linkcode Value} holds, and what its `value` is. */
export type ValueType =
  /** `str`: a string. */
  | "StringValue"
  /** `int`: a number, or a bigint beyond 2^53. */
  | "IntegerValue"
  /** `float`: a number. */
  | "FloatValue"
  /** `bool`: a boolean. */
  | "BooleanValue"
  /** `None`: null. */
  | "NullValue"
  /** jinja2's Undefined: undefined. */
  | "UndefinedValue"
  /** `list`: an array of values. */
  | "ArrayValue"
  /** `tuple`: an array of values. */
  | "TupleValue"
  /** A generator or iterator: an array of its items, iterable once printed never. */
  | "IteratorValue"
  /** `dict.items()`, `keys()`, `values()`: an array of the items. */
  | "dict_items"
  | "dict_keys"
  | "dict_values"
  /** `dict`: a Map in insertion order. */
  | "ObjectValue"
  /** jinja2's `namespace()`: a Map of its attributes, the one mutable value. */
  | "NamespaceValue"
  /** A call's keyword arguments (last of its arguments): a Map. */
  | "KeywordArgumentsValue"
  /** A function, method or macro: a {@linkcode Callable}. */
  | "FunctionValue";

/**
 * A function a template calls, with its evaluated arguments (keyword
 * arguments last, as one {@linkcode ValueType} `KeywordArgumentsValue`).
 */
export type Callable = (args: Value[]) => Value;

/** A template value: its Python type and the JavaScript value holding it. */
export class Value {
  /** The Python type. */
  readonly type: ValueType;
  /** The JavaScript value (see {@linkcode ValueType}). */
  readonly value: unknown;
  /**
   * @param type The Python type.
   * @param value The JavaScript value holding it.
   */
  constructor(type: ValueType, value: unknown) {
    this.type = type;
    this.value = value;
  }
}

/** A float that Python holds as a float even when it is integral (`1.0`). */
export class PyFloat {
  /** The number. */
  readonly value: number;
  /** @param value The number. */
  constructor(value: number) {
    this.value = value;
  }
}

/** Builds a value of the named type. */
export function make(type: ValueType, value: unknown): Value {
  return new Value(type, value);
}

/** A function called with evaluated arguments. */
export function fn(body: Callable): Value {
  return new Value("FunctionValue", body);
}

/** The value holding a mapping: `dict`, `namespace()`, the `loop` object, keyword arguments. */
export function isMapping(
  value: Value,
): value is Value & { readonly value: Map<string, Value> } {
  return value.value instanceof Map;
}

/**
 * Converts a JavaScript value: a `Map` keeps its key order, a `PyFloat` stays a
 * float; plain objects keep JavaScript's key order; a template value is
 * returned as it is.
 */
export function toValue(input: unknown): Value {
  // Already converted (a message remembered from an earlier render).
  if (input instanceof Value) return input;
  if (input instanceof PyFloat) return make("FloatValue", input.value);
  if (input instanceof Map) {
    const entries = new Map<string, Value>();
    for (const [k, v] of input) entries.set(String(k), toValue(v));
    return make("ObjectValue", entries);
  }
  switch (typeof input) {
    case "number":
      return make(
        Number.isInteger(input) ? "IntegerValue" : "FloatValue",
        input,
      );
    case "bigint":
      // Beyond 2^53: arithmetic on it is unsupported, but it prints as written.
      return make("IntegerValue", input);
    case "string":
      return make("StringValue", input);
    case "boolean":
      return make("BooleanValue", input);
    case "undefined":
      return make("UndefinedValue", undefined);
    case "function":
      return fn((args) => toValue(input(...args.map((a) => a.value)) ?? null));
  }
  if (input === null) return make("NullValue", null);
  if (Array.isArray(input)) return make("ArrayValue", input.map(toValue));
  if (typeof input === "object") {
    return toValue(new Map(Object.entries(input)));
  }
  throw new TypeError(`Cannot convert a ${typeof input} to a template value`);
}

/** Python's `str()` of a value, as jinja2 prints it. */
export function pyStr(value: Value): string {
  switch (value.type) {
    case "StringValue":
      return value.value as string;
    case "UndefinedValue":
      return "";
    case "IteratorValue":
    case "FunctionValue":
      // Python prints these with a memory address: no stable text to match.
      throw unsupported("printing a Python generator, method or macro object");
    default:
      return pyRepr(value);
  }
}

/** Python's `repr()` of a value (how lists and dicts print their items). */
export function pyRepr(value: Value): string {
  switch (value.type) {
    case "StringValue":
      return pyStrRepr(value.value as string);
    case "IntegerValue":
      return String(value.value);
    case "FloatValue":
      return pyFloatRepr(value.value as number);
    case "BooleanValue":
      return value.value ? "True" : "False";
    case "NullValue":
      return "None";
    case "UndefinedValue":
      return "";
    case "TupleValue": {
      const items = (value.value as Value[]).map(pyRepr);
      return items.length === 1 ? `(${items[0]},)` : `(${items.join(", ")})`;
    }
    case "dict_items":
    case "dict_keys":
    case "dict_values":
      return `${value.type}([${
        (value.value as Value[]).map(pyRepr).join(", ")
      }])`;
    case "IteratorValue":
    case "FunctionValue":
      throw unsupported("printing a Python generator, method or macro object");
  }
  if (Array.isArray(value.value)) {
    return `[${(value.value as Value[]).map(pyRepr).join(", ")}]`;
  }
  const items = Array.from(
    value.value as Map<string, Value>,
    ([k, v]) => `${pyStrRepr(k)}: ${pyRepr(v)}`,
  );
  return `{${items.join(", ")}}`;
}

/** Options of Python's `json.dumps` that templates pass to `tojson`. */
export interface DumpOptions {
  readonly indent: number | string | null;
  readonly separators: readonly [string, string] | null;
  readonly sortKeys: boolean;
  readonly ensureAscii: boolean;
}

/** Python's `json.dumps(value, ...)`. */
export function pyJsonDumps(value: Value, options: DumpOptions): string {
  const indent = typeof options.indent === "number"
    ? " ".repeat(options.indent)
    : options.indent;
  const [item, key] = options.separators ??
    (indent === null ? [", ", ": "] : [",", ": "]);
  const str = (s: string) => {
    const json = JSON.stringify(s);
    return options.ensureAscii ? asciiOnly(json) : json;
  };
  const dump = (v: Value, depth: number): string => {
    switch (v.type) {
      case "NullValue":
        return "null";
      case "BooleanValue":
        return v.value ? "true" : "false";
      case "IntegerValue":
        return String(v.value);
      case "FloatValue":
        return jsonFloat(v.value as number);
      case "StringValue":
        return str(v.value as string);
    }
    let parts: string[];
    let open: string;
    let close: string;
    if (
      v.type === "IteratorValue" || v.type === "dict_items" ||
      v.type === "dict_keys" || v.type === "dict_values" ||
      v.type === "FunctionValue"
    ) {
      throw raised(`Object of type ${v.type} is not JSON serializable`);
    }
    if (Array.isArray(v.value)) {
      parts = (v.value as Value[]).map((x) => dump(x, depth + 1));
      [open, close] = ["[", "]"];
    } else if (isMapping(v)) {
      let entries = Array.from(v.value);
      if (options.sortKeys) {
        entries = entries.sort(([a], [b]) => compareCodePoints(a, b));
      }
      parts = entries.map(([k, x]) => `${str(k)}${key}${dump(x, depth + 1)}`);
      [open, close] = ["{", "}"];
    } else {
      throw raised(`Object of type ${v.type} is not JSON serializable`);
    }
    if (parts.length === 0) return open + close;
    if (indent === null) return open + parts.join(item) + close;
    const inner = "\n" + indent.repeat(depth + 1);
    const outer = "\n" + indent.repeat(depth);
    return open + inner + parts.join(item + inner) + outer + close;
  };
  return dump(value, 0);
}

function jsonFloat(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (!Number.isFinite(value)) return value > 0 ? "Infinity" : "-Infinity";
  return pyFloatRepr(value);
}

function asciiOnly(json: string): string {
  return json.replace(
    /[\u0080-\uffff]/g,
    (ch) => "\\u" + ch.charCodeAt(0).toString(16).padStart(4, "0"),
  );
}
