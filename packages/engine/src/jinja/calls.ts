// A call as Python makes it: its arguments evaluated in order (positional,
// `*` spread, then keyword and `**` spread), and whatever the callee gave
// called, an Undefined or a value that is not a function refused.
import type { Expr } from "./ast.ts";
import { JINJA2_GLOBALS } from "./globals.ts";
import { raised, UndefinedUseError, unsupported } from "./objects.ts";
import { pyIter } from "./operators.ts";
import type { Scope } from "./scope.ts";
import { type Callable, make, type Value } from "./values.ts";

/** Evaluates an expression as the interpreter does. */
export type Evaluate = (node: Expr, scope: Scope) => Value;

/**
 * A call's arguments: the positional ones, then the keyword ones as one
 * value at the end, as Python evaluates them.
 *
 * @param nodes The argument expressions.
 * @param scope The scope of the call.
 * @param evaluate Evaluates one expression.
 * @returns The values, a `KeywordArgumentsValue` last when there are keywords.
 * @throws {PyRaisedError} For a keyword given twice, or `**` of a non-mapping.
 */
export function evaluateArguments(
  nodes: readonly Expr[],
  scope: Scope,
  evaluate: Evaluate,
): Value[] {
  const values: Value[] = [];
  let keywords: Map<string, Value> | null = null;
  for (const node of nodes) {
    if (node.type === "SpreadExpression") {
      values.push(...pyIter(evaluate(node.argument, scope)));
    } else if (
      node.type !== "KeywordArgumentExpression" &&
      node.type !== "KeywordSpreadExpression"
    ) values.push(evaluate(node, scope));
  }
  const keyword = (key: string, value: Value) => {
    keywords ??= new Map();
    if (keywords.has(key)) {
      throw raised(`got multiple values for keyword argument '${key}'`);
    }
    keywords.set(key, value);
  };
  for (const node of nodes) {
    if (node.type === "KeywordArgumentExpression") {
      keyword(node.key.value, evaluate(node.value, scope));
    } else if (node.type === "KeywordSpreadExpression") {
      const mapping = evaluate(node.argument, scope);
      if (mapping.type !== "ObjectValue") {
        throw raised("argument after ** must be a mapping");
      }
      for (const [k, v] of mapping.value as Map<string, Value>) keyword(k, v);
    }
  }
  if (keywords !== null) values.push(make("KeywordArgumentsValue", keywords));
  return values;
}

/**
 * Calls what a call's callee gave: jinja2 calls whatever it found, so an
 * Undefined (a missing name or attribute, a method the sandbox hides)
 * raises, and Python refuses anything else that is not a function.
 *
 * @param f The callee's value.
 * @param callee The callee's expression (a name jinja2 has and the renderer
 * lacks is unsupported, not refused).
 * @param args The arguments.
 * @returns The call's result.
 */
export function callValue(f: Value, callee: Expr, args: Value[]): Value {
  if (f.type === "FunctionValue") return (f.value as Callable)(args);
  if (f.type !== "UndefinedValue") {
    throw raised(`'${f.type}' object is not callable`);
  }
  if (callee.type === "Identifier" && JINJA2_GLOBALS.has(callee.value)) {
    // jinja2 has it and the server would render: the count fails rather
    // than reporting a rejection.
    throw unsupported(`${callee.value}()`);
  }
  throw new UndefinedUseError("an undefined value is not callable");
}
