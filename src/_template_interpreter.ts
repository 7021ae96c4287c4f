// @huggingface/jinja's interpreter with jinja2's default Undefined: reading
// an attribute or item of an undefined value raises instead of giving
// another undefined value.
import { Environment, Interpreter } from "@huggingface/jinja";
import { UndefinedUseError } from "./_template_objects.ts";
import { make, type Value } from "./_template_values.ts";

type Node = { type: string } & Record<string, unknown>;

// The overridden and reused methods are private in the package's typings.
interface Evaluator {
  evaluate(node: Node, environment: unknown): Value;
  evaluateSliceExpression(
    object: Value,
    node: Node,
    environment: unknown,
  ): Value;
}

const Base = Interpreter as unknown as new (env: unknown) => Evaluator;
const ObjectClass = make("ObjectValue", new Map()).constructor;
const ArrayClass = make("ArrayValue", []).constructor;
type ValueOf = new (value: unknown) => Value;
const IntegerClass = make("IntegerValue", 0).constructor as ValueOf;
const BooleanClass = make("BooleanValue", true).constructor as ValueOf;
const UndefinedClass = make("UndefinedValue", undefined).constructor as ValueOf;
const StringClass = make("StringValue", "").constructor as ValueOf;
type EnvironmentOf = new (parent?: unknown) => {
  setVariable(name: string, value: Value): Value;
};
const Scope = Environment as unknown as EnvironmentOf;

/** The classes `{% break %}` and `{% continue %}` throw (the package does not export them). */
function controlClass(type: "Break" | "Continue"): unknown {
  try {
    new Base(new Environment()).evaluate({ type }, new Environment());
  } catch (error) {
    return (error as object).constructor;
  }
  throw new Error(`@huggingface/jinja no longer throws on ${type}`);
}
const BreakClass = controlClass("Break");
const ContinueClass = controlClass("Continue");

/** Binds a loop variable, or unpacks a tuple of them, in a scope. */
function binder(
  loopvar: Node,
): (scope: InstanceType<EnvironmentOf>, item: Value) => void {
  if (loopvar.type === "Identifier") {
    const name = loopvar["value"] as string;
    return (scope, item) => scope.setVariable(name, item);
  }
  if (loopvar.type !== "TupleLiteral") {
    throw new Error(`Invalid loop variable(s): ${loopvar.type}`);
  }
  const names = loopvar["value"] as Node[];
  return (scope, item) => {
    if (item.type !== "ArrayValue") {
      throw new Error(`Cannot unpack non-iterable type: ${item.type}`);
    }
    const values = item.value as Value[];
    if (names.length !== values.length) {
      throw new Error(
        `Too ${names.length > values.length ? "few" : "many"} items to unpack`,
      );
    }
    names.forEach((name, j) => {
      if (name.type !== "Identifier") {
        throw new Error(`Cannot unpack non-identifier type: ${name.type}`);
      }
      scope.setVariable(name["value"] as string, values[j]!);
    });
  };
}

// The package's member lookup, but given the evaluated object first so that
// an undefined one raises (overriding `evaluate` instead costs every node).
class PyInterpreter extends Base {
  evaluateMemberExpression(node: Node, environment: unknown): Value {
    const object = this.evaluate(node["object"] as Node, environment);
    if (object.type === "UndefinedValue") {
      throw new UndefinedUseError("an undefined value has no attributes");
    }
    const expr = node["property"] as Node;
    if (object.type === "IteratorValue" || object.type.startsWith("dict_")) {
      // Python generators and dict views take no subscripts: jinja2's
      // lookup then finds no attribute either.
      return make("UndefinedValue", undefined);
    }
    let property: string | number;
    if (node["computed"]) {
      if (expr.type === "SliceExpression") {
        return this.evaluateSliceExpression(object, expr, environment);
      }
      const key = this.evaluate(expr, environment);
      if (key.type !== "StringValue" && key.type !== "IntegerValue") {
        throw new Error(`Cannot access property with ${key.type}`);
      }
      property = key.value as string | number;
    } else property = expr["value"] as string | number;
    let value: Value | undefined;
    const held = object.value;
    if (held instanceof Map) {
      if (typeof property !== "string") {
        throw new Error("Cannot access property with non-string");
      }
      value = (held as Map<string, Value>).get(property) ??
        (object instanceof ObjectClass
          ? object.builtins.get(property)
          : undefined);
    } else if (typeof property === "number") {
      if (Array.isArray(held)) value = (held as Value[]).at(property);
      else if (typeof held === "string") {
        const ch = held.at(property);
        value = ch === undefined ? undefined : make("StringValue", ch);
      } else throw new Error("Cannot access property with non-string");
    } else value = object.builtins.get(property);
    return value ?? make("UndefinedValue", undefined);
  }
}

/**
 * The package's `for`, without its per-item costs: a scope per item only
 * for a loop with a test (`for x in xs if ...`), and one `loop` object per
 * loop whose entries change from item to item, as jinja2's single
 * LoopContext does (the package builds a new Map of nine values and a new
 * scope per item: most of a long conversation's render).
 */
function evaluateFor(
  this: Evaluator & { evaluateBlock(body: Node[], scope: unknown): Value },
  node: Node,
  environment: unknown,
): Value {
  const scope = new Scope(environment);
  const source = node["iterable"] as Node;
  const select = source.type === "SelectExpression";
  let iterable = this.evaluate(select ? source["lhs"] as Node : source, scope);
  if (!(iterable instanceof ArrayClass || iterable instanceof ObjectClass)) {
    throw new Error(
      `Expected iterable or object type in for loop: got ${iterable.type}`,
    );
  }
  if (iterable instanceof ObjectClass) {
    iterable = (iterable as unknown as { keys(): Value }).keys();
  }
  const bind = binder(node["loopvar"] as Node);
  let items = iterable.value as Value[];
  if (select) {
    const test = source["test"] as Node;
    items = items.filter((item) => {
      const itemScope = new Scope(scope);
      bind(itemScope, item);
      return (this.evaluate(test, itemScope) as unknown as {
        __bool__(): Value;
      }).__bool__().value;
    });
  }
  const length = items.length;
  const loop = new Map<string, Value>();
  const loopValue = make("ObjectValue", loop);
  // Values never change once made: one of each number and flag per loop.
  const numbers: Value[] = [];
  for (let n = 0; n <= length; n++) numbers.push(new IntegerClass(n));
  const yes = new BooleanClass(true);
  const no = new BooleanClass(false);
  const none = new UndefinedClass(undefined);
  const body = node["body"] as Node[];
  let result = "";
  // As in jinja2, `else` runs unless an item's body ran to its end.
  let completed = false;
  for (let i = 0; i < length; ++i) {
    loop.set("index", numbers[i + 1]!);
    loop.set("index0", numbers[i]!);
    loop.set("revindex", numbers[length - i]!);
    loop.set("revindex0", numbers[length - i - 1]!);
    loop.set("first", i === 0 ? yes : no);
    loop.set("last", i === length - 1 ? yes : no);
    loop.set("length", numbers[length]!);
    loop.set("previtem", i > 0 ? items[i - 1]! : none);
    loop.set("nextitem", i < length - 1 ? items[i + 1]! : none);
    scope.setVariable("loop", loopValue);
    bind(scope, items[i]!);
    try {
      result += this.evaluateBlock(body, scope).value;
    } catch (error) {
      const kind = (error as object | null)?.constructor;
      if (kind === ContinueClass) continue;
      if (kind === BreakClass) break;
      throw error;
    }
    completed = true;
  }
  if (!completed) {
    result += this.evaluateBlock(node["defaultBlock"] as Node[], scope).value;
  }
  return new StringClass(result);
}

(PyInterpreter.prototype as unknown as { evaluateFor: unknown }).evaluateFor =
  evaluateFor;

/** Runs a parsed program in an environment. */
export function runProgram(program: unknown, environment: unknown): Value {
  return (new PyInterpreter(environment) as unknown as {
    run(program: unknown): Value;
  }).run(program);
}
