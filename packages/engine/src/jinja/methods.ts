// `x.name(...)` for the methods templates call by name, dispatched on the
// receiver as Python does: a string's method, a dict's view, a list's or
// tuple's `count` and `index`, or a mapping's item holding a macro. Anything
// else has no such attribute, and calling the Undefined jinja2 gives for it
// raises.
import { dictView } from "./lookup.ts";
import { isMutable } from "./loop_fields.ts";
import { pyEq, raised, splitArgs, UndefinedUseError } from "./objects.ts";
import { STRING_METHODS } from "./str.ts";
import { type Callable, make, type Value } from "./values.ts";

/** The method names called this way (any other goes through attribute lookup). */
export const METHODS: ReadonlySet<string> = new Set([
  "strip",
  "lstrip",
  "rstrip",
  "split",
  "title",
  "capitalize",
  "format",
  "items",
  "keys",
  "values",
  "find",
  "rfind",
  "index",
  "count",
  "splitlines",
  "isdigit",
  "isalpha",
  "isalnum",
  "islower",
  "isupper",
  "isspace",
  "zfill",
  "rsplit",
  "partition",
  "rpartition",
  "join",
]);

/** Python lists and tuples have these two of the methods. */
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

const VIEWS: ReadonlyMap<string, "dict_items" | "dict_keys" | "dict_values"> =
  new Map([
    ["items", "dict_items"],
    ["keys", "dict_keys"],
    ["values", "dict_values"],
  ]);

/**
 * Calls the method `name` (one of {@linkcode METHODS}) of `self`.
 *
 * @param name The method's name.
 * @param self The receiver.
 * @param args The evaluated arguments, keyword arguments last.
 * @returns The method's result.
 * @throws {UndefinedUseError} Where the receiver has no such method.
 */
export function callMethod(
  name: string,
  self: Value,
  args: Value[],
): Value {
  if (self.type === "StringValue") {
    const body = STRING_METHODS.get(name);
    if (body !== undefined) {
      const [positional, kw] = splitArgs(args);
      return body(self.value as string, positional, kw);
    }
  } else if (self.value instanceof Map) {
    // A namespace or `loop` has no dict methods.
    const view = VIEWS.get(name);
    if (view !== undefined && !isMutable(self)) {
      return dictView(self.value as Map<string, Value>, view);
    }
    const member = (self.value as Map<string, Value>).get(name);
    if (member?.type === "FunctionValue") {
      return (member.value as Callable)(args);
    }
  } else if (self.type === "ArrayValue" || self.type === "TupleValue") {
    const sequence = SEQUENCE_METHODS.get(name);
    if (sequence !== undefined) {
      return sequence(self.value as Value[], splitArgs(args)[0]);
    }
  }
  throw new UndefinedUseError(
    `'${self.type}' object has no attribute '${name}'`,
  );
}
