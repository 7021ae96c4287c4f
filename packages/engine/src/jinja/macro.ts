// `{% macro %}` and `{% call %}`: a macro is a function over the scope it
// was defined in (jinja2's closures: the names bound there when it runs,
// never its caller's); a call block's body reaches the macro as `caller`.
import type { Stmt } from "./ast.ts";
import { callValue, type Evaluate, evaluateArguments } from "./calls.ts";
import {
  bindArguments,
  type MacroParameters,
  specialsOf,
} from "./macro_arguments.ts";
import { markMacro, type Recorder } from "./memo.ts";
import { Scope } from "./scope.ts";
import { fn, make, type Value } from "./values.ts";

type Node = { type: string } & Record<string, unknown>;

/** What a macro needs of the interpreter running it. */
export interface MacroHost {
  /** The item body being recorded for reuse, or null. */
  readonly rec: Recorder | null;
  /** An expression's value. */
  readonly expr: Evaluate;
  /** The output of statements. */
  block(body: readonly Stmt[], scope: Scope): string;
}

/** A function rendering `body` in a scope of its own under `scope`, its arguments bound. */
function closure(
  host: MacroHost,
  parameters: MacroParameters,
  body: readonly Stmt[],
  scope: Scope,
): Value {
  const evaluate: Evaluate = (e, s) => host.expr(e, s);
  return fn((args) => {
    const inner = new Scope(scope);
    bindArguments(parameters, args, inner, evaluate);
    return make("StringValue", host.block(body, inner));
  });
}

/** `{% macro name(params) %}body{% endmacro %}`: binds `name` in `scope`. */
export function defineMacro(
  host: MacroHost,
  node: Extract<Stmt, { type: "Macro" }>,
  scope: Scope,
): void {
  const value = closure(
    host,
    {
      label: `'${node.name.value}'`,
      parameters: node.args,
      specials: specialsOf(node.args, node.body),
    },
    node.body,
    scope,
  );
  scope.setVariable(node.name.value, value);
  markMacro(value, node as Node);
  host.rec?.definedMacro(scope);
}

/**
 * `{% call(params) macro(args) %}body{% endcall %}`: the macro called with
 * `caller`, a function rendering the body where the call is, as jinja2
 * passes it: one more keyword argument.
 */
export function callBlock(
  host: MacroHost,
  node: Extract<Stmt, { type: "CallStatement" }>,
  scope: Scope,
): Value {
  const parameters = node.callerArgs ?? [];
  const caller = closure(
    host,
    {
      label: "None",
      parameters,
      specials: specialsOf(parameters, node.body),
    },
    node.body,
    scope,
  );
  const callee = host.expr(node.call.callee, scope);
  const evaluate: Evaluate = (e, s) => host.expr(e, s);
  const args = evaluateArguments(node.call.args, scope, evaluate);
  const last = args.at(-1);
  if (last?.type === "KeywordArgumentsValue") {
    (last.value as Map<string, Value>).set("caller", caller);
  } else {
    args.push(make("KeywordArgumentsValue", new Map([["caller", caller]])));
  }
  return callValue(callee, node.call.callee, args);
}
