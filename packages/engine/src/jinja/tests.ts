// jinja2's tests (`x is defined`, `select('odd')`, `selectattr('a', 'eq', 1)`)
// with Python semantics.
import { pyStr, type Value } from "./values.ts";
import {
  attrGetter,
  isNumber,
  itemsOf,
  iterator,
  type Kwargs,
  num,
  pyCompare,
  pyEq,
  raised,
  splitArgs,
  truthy,
  unsupported,
} from "./objects.ts";
import { JINJA2_TESTS } from "./names.ts";

/** A jinja2 test: the value, then the test's own arguments. */
export type Test = (v: Value, args: Value[]) => boolean;

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
  [
    "divisibleby",
    (v, [n]) => {
      if (!isNumber(v) || n === undefined || !isNumber(n)) {
        throw raised("divisibleby of a non-number");
      }
      return mod(num(v), num(n)) === 0;
    },
  ],
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

/** A test jinja2 has and the renderer lacks is unsupported; any other name, jinja2 refuses. */
function noTest(name: string): Error {
  return JINJA2_TESTS.has(name)
    ? unsupported(`the test '${name}'`)
    : raised(`No test named '${name}'`);
}

/** The named test (`x is name`); raises for names jinja2 lacks. */
export function testNamed(name: string): Test {
  const test = TESTS.get(name);
  if (test === undefined) throw noTest(name);
  return test;
}

function cased(text: string, want: RegExp, other: RegExp): boolean {
  return want.test(text) && !other.test(text);
}

export function mod(a: number, b: number): number {
  if (b === 0) throw raised("integer division or modulo by zero");
  return ((a % b) + b) % b;
}

function oddEven(v: Value): number {
  if (!isNumber(v)) throw raised("odd/even of a non-number");
  return mod(num(v), 2);
}

function contains(seq: Value, v: Value): boolean {
  if (seq.type === "StringValue") {
    if (v.type !== "StringValue") {
      throw raised("'in <string>' requires string as left operand");
    }
    return (seq.value as string).includes(v.value as string);
  }
  if (seq.value instanceof Map) {
    return v.type === "StringValue" && seq.value.has(v.value as string);
  }
  return itemsOf(seq).some((x) => pyEq(x, v));
}

export function selectOrReject(select: boolean, byAttr: boolean) {
  return (all: Value[]): Value => {
    const [[seq, ...rest]] = splitArgs(all) as [[Value, ...Value[]], Kwargs];
    let getter = (v: Value) => v;
    let args = rest;
    if (byAttr) {
      const attr = rest[0];
      if (attr === undefined) {
        throw raised("Missing parameter for attribute name");
      }
      getter = attrGetter(attr);
      args = rest.slice(1);
    }
    const [name, ...testArgs] = args;
    let pass: (v: Value) => boolean;
    if (name === undefined) pass = truthy;
    else {
      const test = TESTS.get(String(name.value));
      if (test === undefined) throw noTest(String(name.value));
      pass = (v) => test(v, testArgs);
    }
    return iterator(itemsOf(seq).filter((v) => pass(getter(v)) === select));
  };
}
