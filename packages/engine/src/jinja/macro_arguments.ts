// jinja2's macro arguments: positional, then by keyword, then defaults
// (evaluated in the macro's scope, so a default may read an earlier
// parameter); extra arguments are kept in `varargs` and `kwargs`, and a call
// block's body is `caller`, only when the body reads those names, as jinja2
// decides at compile time.
import type { Expr, Parameter, Stmt } from "./ast.ts";
import { raised } from "./objects.ts";
import type { Scope } from "./scope.ts";
import { make, type Value } from "./values.ts";

type Node = { type: string } & Record<string, unknown>;

/** Which of `kwargs`, `varargs` and `caller` a macro's body reads. */
export interface Specials {
  readonly kwargs: boolean;
  readonly varargs: boolean;
  readonly caller: boolean;
}

function parameterName(parameter: Parameter): string {
  return parameter.type === "Identifier"
    ? parameter.value
    : parameter.key.value;
}

/**
 * Whether a body reads `kwargs`, `varargs` or `caller` before binding the name
 * itself (a loop target, a `set`, a nested macro's parameter), visiting the
 * tree in jinja2's order.
 */
export function specialsOf(parameters: Parameter[], body: Stmt[]): Specials {
  const declared = new Set(parameters.map(parameterName));
  const read = new Set<string>();
  const special = (name: string) =>
    name === "kwargs" || name === "varargs" || name === "caller";
  const declare = (target: Node) => {
    if (target.type === "Identifier") declared.add(target["value"] as string);
    if (target.type === "TupleLiteral") {
      for (const item of target["value"] as Node[]) declare(item);
    }
  };
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    if (value instanceof Map) {
      for (const [k, v] of value) {
        visit(k);
        visit(v);
      }
      return;
    }
    if (typeof value !== "object" || value === null || !("type" in value)) {
      return;
    }
    const node = value as Node;
    switch (node.type) {
      case "Identifier": {
        const name = node["value"] as string;
        if (special(name) && !declared.has(name)) read.add(name);
        return;
      }
      case "For": {
        declare(node["loopvar"] as Node);
        const iterable = node["iterable"] as Node;
        const select = iterable.type === "SelectExpression";
        // jinja2 visits a loop's condition after its body and else block.
        visit(select ? iterable["lhs"] : iterable);
        visit(node["body"]);
        visit(node["defaultBlock"]);
        if (select) visit(iterable["test"]);
        return;
      }
      case "Set":
        declare(node["assignee"] as Node);
        visit(node["value"]);
        visit(node["body"]);
        return;
      case "Macro":
      case "CallStatement": {
        const own =
          (node.type === "Macro"
            ? node["args"]
            : node["callerArgs"] ?? []) as Parameter[];
        if (node.type === "CallStatement") visit(node["call"]);
        for (const parameter of own) declared.add(parameterName(parameter));
        for (const parameter of own) {
          if (parameter.type === "KeywordArgumentExpression") {
            visit(parameter.value);
          }
        }
        visit(node["body"]);
        return;
      }
      case "FilterStatement":
        visit(node["body"]);
        visit(filterArguments(node["filter"] as Node));
        return;
      case "FilterExpression":
        visit(node["operand"]);
        visit(filterArguments(node["filter"] as Node));
        return;
      case "MemberExpression":
        visit(node["object"]);
        if (node["computed"]) visit(node["property"]);
        return;
      case "TestExpression":
        visit(node["operand"]);
        return;
      case "SelectExpression":
        visit(node["test"]);
        visit(node["lhs"]);
        return;
      case "KeywordArgumentExpression":
        visit(node["value"]);
        return;
    }
    for (const [key, child] of Object.entries(node)) {
      if (key !== "type") visit(child);
    }
  };
  visit(body);
  return {
    kwargs: read.has("kwargs"),
    varargs: read.has("varargs"),
    caller: read.has("caller"),
  };
}

/** A filter's arguments (its name is syntax, not a variable). */
function filterArguments(filter: Node): unknown {
  return filter.type === "CallExpression" ? filter["args"] : null;
}

/** How a macro binds its arguments. */
export interface MacroParameters {
  /** The name errors give (`'name'`, or `None` for a call block). */
  readonly label: string;
  readonly parameters: Parameter[];
  readonly specials: Specials;
}

/**
 * Binds a call's arguments in the macro's scope, as jinja2 does.
 *
 * @param macro The macro's parameters.
 * @param args The call's arguments, keyword arguments last.
 * @param scope The macro's scope.
 * @param evaluate Evaluates a default in the macro's scope.
 * @throws {PyRaisedError} For an argument the macro does not take.
 */
export function bindArguments(
  macro: MacroParameters,
  args: Value[],
  scope: Scope,
  evaluate: (expr: Expr, scope: Scope) => Value,
): void {
  const { label, parameters, specials } = macro;
  const positional = args.slice();
  let keywords = new Map<string, Value>();
  if (positional.at(-1)?.type === "KeywordArgumentsValue") {
    keywords = new Map(positional.pop()!.value as Map<string, Value>);
  }
  // A call block passes its body as `caller`: jinja2 takes it only when
  // the body reads it.
  const caller = keywords.get("caller");
  if (caller !== undefined) {
    if (!specials.caller) {
      throw raised(
        `macro ${label} was invoked with two values for the special caller argument`,
      );
    }
    keywords.delete("caller");
  }
  if (specials.caller) {
    scope.setVariable("caller", caller ?? make("UndefinedValue", undefined));
  }
  const defaults: [string, Expr][] = [];
  for (let i = 0; i < parameters.length; i++) {
    const parameter = parameters[i]!;
    const name = parameterName(parameter);
    let value = positional[i];
    if (value === undefined && keywords.has(name)) {
      value = keywords.get(name);
      keywords.delete(name);
    }
    if (value === undefined && parameter.type !== "Identifier") {
      defaults.push([name, parameter.value]);
    }
    scope.setVariable(name, value ?? make("UndefinedValue", undefined));
  }
  if (specials.kwargs) {
    scope.setVariable("kwargs", make("ObjectValue", keywords));
  } else if (keywords.size > 0) {
    throw raised(
      `macro ${label} takes no keyword argument '${keywords.keys().next().value}'`,
    );
  }
  const extra = positional.slice(parameters.length);
  if (specials.varargs) scope.setVariable("varargs", make("TupleValue", extra));
  else if (extra.length > 0) {
    throw raised(
      `macro ${label} takes not more than ${parameters.length} argument(s)`,
    );
  }
  for (const [name, value] of defaults) {
    scope.setVariable(name, evaluate(value, scope));
  }
}
