// The expressions a reused loop item is checked against (memo.ts) are
// evaluated again before every reuse: a few hundred a render at 128k
// tokens, most of them shaped like `loop.index0 > ns.last_query_index` or
// `(messages|length - 1) - loop.index0`. This compiles the common shapes
// to closures that give the value the interpreter would give, and gives
// up (undefined) wherever they could differ: the interpreter then runs.
import { type FilterCall, filterName } from "./ast.ts";
import { filterNamed } from "./filter_table.ts";
import { DICT_ATTRIBUTES } from "./names.ts";
import { pyEq } from "./objects.ts";
import type { Node, Scope } from "./scope.ts";
import { testNamed } from "./tests.ts";
import { type Callable, make, pyStr, type Value } from "./values.ts";

/** A compiled check: the expression's value, or undefined to let the interpreter evaluate it. */
export type Check = (scope: Scope) => Value | undefined;

const compiled = new WeakMap<Node, Check | null>();

/**
 * The compiled form of an expression, or null for a shape not compiled.
 *
 * @param node An expression node (see ast.ts).
 * @returns A closure over the scope it is checked in, or null.
 */
export function compileCheck(node: Node): Check | null {
  let check = compiled.get(node);
  if (check === undefined) {
    check = compile(node);
    compiled.set(node, check);
  }
  return check;
}

const TRUE = make("BooleanValue", true);
const FALSE = make("BooleanValue", false);

/** The variable lookup: the nearest scope holding the name. */
function lookup(scope: Scope, name: string): Value {
  return scope.lookup(name);
}

function compile(node: Node): Check | null {
  switch (node.type) {
    case "IntegerLiteral": {
      const value = make("IntegerValue", node["value"]);
      return () => value;
    }
    case "StringLiteral": {
      const value = make("StringValue", node["value"]);
      return () => value;
    }
    case "Identifier": {
      const name = node["value"] as string;
      return (scope) => lookup(scope, name);
    }
    case "MemberExpression":
      return node["computed"] ? item(node) : member(node);
    case "UnaryExpression": {
      const argument = compile(node["argument"] as Node);
      if (
        argument === null ||
        (node["operator"] as { value: string }).value !== "not"
      ) return null;
      return (scope) => {
        const value = argument(scope);
        if (value?.type !== "BooleanValue") return undefined;
        return value.value ? FALSE : TRUE;
      };
    }
    case "BinaryExpression":
      return binary(node);
    case "CallExpression":
      return call(node);
    case "FilterExpression":
      return filter(node);
    case "TestExpression":
      return test(node);
    default:
      return null;
  }
}

/** `object.name` where the object holds `name` in its mapping (dicts, namespaces, `loop`). */
function member(node: Node): Check | null {
  const object = compile(node["object"] as Node);
  if (object === null) return null;
  const name = (node["property"] as Node)["value"] as string;
  // A dict's method, not its item (a namespace's entry: the interpreter tells).
  if (DICT_ATTRIBUTES.has(name)) return null;
  return (scope) => {
    const value = object(scope);
    const held = value?.value;
    // Anything else (an undefined object, a builtin method, a dict view)
    // takes the interpreter's path.
    if (
      !(held instanceof Map) || value!.type === "IteratorValue" ||
      value!.type.startsWith("dict_")
    ) return undefined;
    return held.get(name) as Value | undefined;
  };
}

/**
 * `list[i]` with an integer `i` within the list (`messages[loop.index0 - 1]`);
 * any other key or object (a slice, a negative or past-the-end index, a
 * mapping) takes the interpreter's path.
 */
function item(node: Node): Check | null {
  const property = node["property"] as Node;
  if (property.type === "SliceExpression") return null;
  const object = compile(node["object"] as Node);
  const key = compile(property);
  if (object === null || key === null) return null;
  return (scope) => {
    const list = object(scope);
    if (list?.type !== "ArrayValue") return undefined;
    const index = key(scope);
    if (index?.type !== "IntegerValue" || typeof index.value !== "number") {
      return undefined;
    }
    const items = list.value as Value[];
    return index.value >= 0 && index.value < items.length
      ? items[index.value]
      : undefined;
  };
}

/** `and`/`or` on flags; `+ - *` and comparisons on integers. */
function binary(node: Node): Check | null {
  const left = compile(node["left"] as Node);
  const right = compile(node["right"] as Node);
  const operator = (node["operator"] as { value: string }).value;
  if (left !== null && (operator === "and" || operator === "or")) {
    // A right side not compiled still lets the left one decide, as it
    // does whenever the operator stops there (`ns.flag and x.startswith(y)`).
    const and = operator === "and";
    return (scope) => {
      const a = left(scope);
      if (a?.type !== "BooleanValue") return undefined;
      return a.value !== and ? a : right === null ? undefined : right(scope);
    };
  }
  if (left === null || right === null) return null;
  if (operator === "==" || operator === "!=") {
    const equal = operator === "==";
    return (scope) => {
      const a = left(scope);
      if (a === undefined) return undefined;
      const b = right(scope);
      if (b === undefined) return undefined;
      return pyEq(a, b) === equal ? TRUE : FALSE;
    };
  }
  if (operator === "~") {
    return (scope) => {
      const a = left(scope);
      if (a === undefined) return undefined;
      const b = right(scope);
      if (b === undefined) return undefined;
      return make("StringValue", pyStr(a) + pyStr(b));
    };
  }
  const integers = (scope: Scope): [number, number] | undefined => {
    const a = left(scope);
    if (a?.type !== "IntegerValue") return undefined;
    const b = right(scope);
    if (b?.type !== "IntegerValue") return undefined;
    if (typeof a.value !== "number" || typeof b.value !== "number") {
      return undefined;
    }
    return [a.value, b.value];
  };
  const arithmetic =
    (f: (a: number, b: number) => number): Check => (scope) => {
      const pair = integers(scope);
      if (pair === undefined) return undefined;
      const n = f(pair[0], pair[1]);
      // Python's ints: no -0, and no bound (beyond 2^53 the interpreter decides).
      if (!Number.isSafeInteger(n)) return undefined;
      return make("IntegerValue", n === 0 ? 0 : n);
    };
  const comparison =
    (f: (a: number, b: number) => boolean): Check => (scope) => {
      const pair = integers(scope);
      return pair && (f(pair[0], pair[1]) ? TRUE : FALSE);
    };
  switch (operator) {
    case "+":
      return arithmetic((a, b) => a + b);
    case "-":
      return arithmetic((a, b) => a - b);
    case "*":
      return arithmetic((a, b) => a * b);
    case "<":
      return comparison((a, b) => a < b);
    case ">":
      return comparison((a, b) => a > b);
    case "<=":
      return comparison((a, b) => a <= b);
    case ">=":
      return comparison((a, b) => a >= b);
    default:
      return null;
  }
}

/** Compiles each argument, or null if one is not compiled (or is a keyword). */
function compileAll(nodes: Node[]): Check[] | null {
  const checks: Check[] = [];
  for (const node of nodes) {
    const check = compile(node);
    if (check === null) return null;
    checks.push(check);
  }
  return checks;
}

/** The arguments' values, or undefined if one hands over. */
function valuesOf(checks: readonly Check[], scope: Scope): Value[] | undefined {
  const values: Value[] = [];
  for (const check of checks) {
    const value = check(scope);
    if (value === undefined) return undefined;
    values.push(value);
  }
  return values;
}

/** `f(a, b)` with positional arguments only, `f` a function of the scope. */
function call(node: Node): Check | null {
  const callee = node["callee"] as Node;
  if (callee.type !== "Identifier") return null;
  const name = callee["value"] as string;
  const args = compileAll(node["args"] as Node[]);
  if (args === null) return null;
  return (scope) => {
    const values = valuesOf(args, scope);
    if (values === undefined) return undefined;
    const f = lookup(scope, name);
    if (f.type !== "FunctionValue") return undefined;
    return (f.value as Callable)(values);
  };
}

/** `x | name(a, b)` with positional arguments only: filters are pure. */
function filter(node: Node): Check | null {
  const operand = compile(node["operand"] as Node);
  const call = node["filter"] as FilterCall;
  const args = call.type === "CallExpression"
    ? compileAll(call.args as Node[])
    : [];
  if (operand === null || args === null) return null;
  const name = filterName(call);
  return (scope) => {
    const value = operand(scope);
    if (value === undefined) return undefined;
    const values = valuesOf(args, scope);
    if (values === undefined) return undefined;
    return filterNamed(name)([value, ...values]);
  };
}

/** `x is name` and `x is not name`. */
function test(node: Node): Check | null {
  const operand = compile(node["operand"] as Node);
  if (operand === null) return null;
  const name = (node["test"] as Node)["value"] as string;
  const negate = node["negate"] as boolean;
  return (scope) => {
    const value = operand(scope);
    if (value === undefined) return undefined;
    return testNamed(name)(value, []) !== negate ? TRUE : FALSE;
  };
}
