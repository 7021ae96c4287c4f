// Python's binary and unary operators as jinja2 templates run them: what
// Python computes, Python's result; what Python refuses (`"a" + None`,
// `1 + "a"`, `len` of None), a refusal; an Undefined operand, jinja2's
// UndefinedError. `and`, `or`, `~`, `==` and `!=` are handled elsewhere.
import { pyFormatPercent } from "./format.ts";
import {
  isNumber,
  itemsOf,
  num,
  pyCompare,
  pyEq,
  raised,
  tuple,
  UndefinedUseError,
  unsupported,
} from "./objects.ts";
import { mod } from "./tests.ts";
import { make, type Value } from "./values.ts";

/** Python's name of a value's type, as its error messages give it. */
function typeName(v: Value): string {
  switch (v.type) {
    case "StringValue":
      return "str";
    case "IntegerValue":
      return "int";
    case "FloatValue":
      return "float";
    case "BooleanValue":
      return "bool";
    case "NullValue":
      return "NoneType";
    case "ArrayValue":
      return "list";
    case "TupleValue":
      return "tuple";
    case "ObjectValue":
      return "dict";
    default:
      return v.type;
  }
}

function refused(op: string, a: Value, b: Value): Error {
  return raised(
    `unsupported operand type(s) for ${op}: '${typeName(a)}' and '${
      typeName(b)
    }'`,
  );
}

const isFloat = (v: Value) => v.type === "FloatValue";
const isInt = (v: Value) =>
  v.type === "IntegerValue" || v.type === "BooleanValue";
const isList = (v: Value) => v.type === "ArrayValue" || v.type === "TupleValue";

/** A number result: an int when both operands are ints (bools count as ints). */
function number(a: Value, b: Value, n: number): Value {
  if (isFloat(a) || isFloat(b)) return make("FloatValue", n);
  // Python's ints have no bound; beyond 2^53 the digits would differ.
  if (!Number.isSafeInteger(n)) throw unsupported("an integer beyond 2^53");
  return make("IntegerValue", n === 0 ? 0 : n);
}

function bigints(a: Value, b: Value): void {
  if (typeof a.value === "bigint" || typeof b.value === "bigint") {
    throw unsupported("arithmetic on an integer beyond 2^53");
  }
}

function repeat(seq: Value, times: Value): Value {
  const n = Math.max(0, num(times));
  if (seq.type === "StringValue") {
    return make("StringValue", (seq.value as string).repeat(n));
  }
  const items: Value[] = [];
  for (let i = 0; i < n; i++) items.push(...seq.value as Value[]);
  return seq.type === "TupleValue" ? tuple(items) : make("ArrayValue", items);
}

function divisor(b: Value): number {
  const d = num(b);
  if (d === 0) throw raised("division by zero");
  return d;
}

/** Python's `%` of numbers: the result takes the divisor's sign. */
function modulo(a: Value, b: Value): Value {
  const d = divisor(b);
  if (isInt(a) && isInt(b)) return number(a, b, mod(num(a), d));
  const r = num(a) % d;
  return make("FloatValue", r !== 0 && (r < 0) !== (d < 0) ? r + d : r);
}

/**
 * `text % args`: a tuple spreads, a mapping names, anything else is one
 * argument, which Python lets go unused when it could be a mapping (it
 * has items: a dict, a list, an Undefined).
 */
function percent(text: string, args: Value): Value {
  if (args.type === "TupleValue") {
    return make("StringValue", pyFormatPercent(text, args.value as Value[]));
  }
  if (args.type === "ObjectValue" && /%\(/.test(text)) {
    return make(
      "StringValue",
      pyFormatPercent(text, args.value as Map<string, Value>),
    );
  }
  const mappingLike = args.value instanceof Map ||
    args.type === "ArrayValue" || args.type === "UndefinedValue";
  try {
    return make("StringValue", pyFormatPercent(text, [args]));
  } catch (error) {
    if (
      mappingLike &&
      /^not all arguments converted/.test(String((error as Error).message))
    ) {
      return make("StringValue", pyFormatPercent(text, []));
    }
    throw error;
  }
}

function power(a: Value, b: Value): Value {
  const x = num(a), y = num(b);
  if (x === 0 && y < 0) {
    throw raised("0.0 cannot be raised to a negative power");
  }
  const result = x ** y;
  if (Number.isNaN(result) && !Number.isNaN(x) && !Number.isNaN(y)) {
    // A negative base to a fractional power is a complex number in Python.
    throw unsupported("a complex result of **");
  }
  if (!Number.isFinite(result) && Number.isFinite(x) && Number.isFinite(y)) {
    if (isInt(a) && isInt(b) && y >= 0) {
      throw unsupported("an integer beyond 2^53");
    }
    throw raised("(34, 'Numerical result out of range')");
  }
  if (isInt(a) && isInt(b)) {
    return y < 0 ? make("FloatValue", result) : number(a, b, result);
  }
  return make("FloatValue", result);
}

function arithmetic(op: string, a: Value, b: Value): Value {
  const numbers = isNumber(a) && isNumber(b);
  if (numbers) bigints(a, b);
  switch (op) {
    case "+":
      if (numbers) return number(a, b, num(a) + num(b));
      if (a.type === "StringValue" && b.type === "StringValue") {
        return make("StringValue", (a.value as string) + (b.value as string));
      }
      if (isList(a) && a.type === b.type) {
        const items = [...a.value as Value[], ...b.value as Value[]];
        return a.type === "TupleValue"
          ? tuple(items)
          : make("ArrayValue", items);
      }
      if (a.type === "StringValue") {
        throw raised(
          `can only concatenate str (not "${typeName(b)}") to str`,
        );
      }
      throw refused("+", a, b);
    case "-":
      if (numbers) return number(a, b, num(a) - num(b));
      throw refused("-", a, b);
    case "*":
      if (numbers) return number(a, b, num(a) * num(b));
      if ((a.type === "StringValue" || isList(a)) && isInt(b)) {
        return repeat(a, b);
      }
      if ((b.type === "StringValue" || isList(b)) && isInt(a)) {
        return repeat(b, a);
      }
      throw refused("*", a, b);
    case "/":
      if (numbers) return make("FloatValue", num(a) / divisor(b));
      throw refused("/", a, b);
    case "//":
      if (numbers) return number(a, b, Math.floor(num(a) / divisor(b)));
      throw refused("//", a, b);
    case "%":
      if (a.type === "StringValue") return percent(a.value as string, b);
      if (numbers) return modulo(a, b);
      throw refused("%", a, b);
    case "**":
      if (numbers) return power(a, b);
      throw refused("** or pow()", a, b);
  }
  throw unsupported(`the operator ${op}`);
}

/** Whether Python can order these two (numbers, strings, like sequences). */
function ordered(a: Value, b: Value, op: string): number {
  const comparable = (isNumber(a) && isNumber(b)) ||
    (a.type === "StringValue" && b.type === "StringValue") ||
    (isList(a) && a.type === b.type);
  if (!comparable) {
    throw raised(
      `'${op}' not supported between instances of '${typeName(a)}' and '${
        typeName(b)
      }'`,
    );
  }
  if (typeof a.value === "bigint" || typeof b.value === "bigint") {
    throw unsupported("comparing an integer beyond 2^53");
  }
  return pyCompare(a, b);
}

/** Python's `needle in haystack`. */
export function pyContains(haystack: Value, needle: Value): boolean {
  switch (haystack.type) {
    case "UndefinedValue":
      return false;
    case "StringValue":
      if (needle.type === "UndefinedValue" || needle.type !== "StringValue") {
        throw raised(
          `'in <string>' requires string as left operand, not ${
            typeName(needle)
          }`,
        );
      }
      return (haystack.value as string).includes(needle.value as string);
  }
  if (haystack.value instanceof Map && !haystack.type.startsWith("dict_")) {
    if (Array.isArray(needle.value) && needle.type !== "TupleValue") {
      throw raised(`unhashable type: '${typeName(needle)}'`);
    }
    if (needle.value instanceof Map) {
      throw raised(`unhashable type: '${typeName(needle)}'`);
    }
    // Keys are strings: a value of another type is never one.
    return needle.type === "StringValue" &&
      (haystack.value as Map<string, Value>).has(needle.value as string);
  }
  if (Array.isArray(haystack.value)) {
    return (haystack.value as Value[]).some((item) => pyEq(item, needle));
  }
  if (haystack.type === "FunctionValue") {
    throw unsupported("`in` on a Python method or macro");
  }
  throw raised(`argument of type '${typeName(haystack)}' is not iterable`);
}

/**
 * Python's `left op right` for the arithmetic, comparison and membership
 * operators.
 *
 * @throws {UndefinedUseError} For arithmetic or ordering on an Undefined.
 * @throws {PyRaisedError} Where Python raises.
 * @throws {UnsupportedError} Where the result is beyond what is modelled.
 */
export function pyBinary(op: string, left: Value, right: Value): Value {
  if (op === "in" || op === "not in") {
    return make("BooleanValue", pyContains(right, left) === (op === "in"));
  }
  // `text % x` formats the Undefined (printed as ""); any other use raises.
  if (op === "%" && left.type === "StringValue") {
    return percent(left.value as string, right);
  }
  if (left.type === "UndefinedValue" || right.type === "UndefinedValue") {
    throw new UndefinedUseError(`${op} on an undefined value`);
  }
  switch (op) {
    case "<":
      return make("BooleanValue", ordered(left, right, op) < 0);
    case ">":
      return make("BooleanValue", ordered(left, right, op) > 0);
    case "<=":
      return make("BooleanValue", ordered(left, right, op) <= 0);
    case ">=":
      return make("BooleanValue", ordered(left, right, op) >= 0);
  }
  return arithmetic(op, left, right);
}

/** Python's unary `-x` and `+x`. */
export function pyUnary(op: string, value: Value): Value {
  if (value.type === "UndefinedValue") {
    throw new UndefinedUseError(`unary ${op} on an undefined value`);
  }
  if (!isNumber(value)) {
    throw raised(`bad operand type for unary ${op}: '${typeName(value)}'`);
  }
  if (typeof value.value === "bigint") {
    throw unsupported("arithmetic on an integer beyond 2^53");
  }
  const n = op === "-" ? -num(value) : num(value);
  return isFloat(value)
    ? make("FloatValue", n)
    : make("IntegerValue", n === 0 ? 0 : n);
}

/** Iterating a value as Python's `for` does. */
export function pyIter(value: Value): Value[] {
  if (value.type === "NullValue" || isNumber(value)) {
    throw raised(`'${typeName(value)}' object is not iterable`);
  }
  if (value.type === "FunctionValue") {
    throw unsupported("iterating a Python method or macro object");
  }
  return itemsOf(value);
}
