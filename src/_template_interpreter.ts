// @huggingface/jinja's interpreter with jinja2's default Undefined: reading
// an attribute or item of an undefined value raises instead of giving
// another undefined value.
import { Interpreter } from "@huggingface/jinja";
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

/** Runs a parsed program in an environment. */
export function runProgram(program: unknown, environment: unknown): Value {
  return (new PyInterpreter(environment) as unknown as {
    run(program: unknown): Value;
  }).run(program);
}
