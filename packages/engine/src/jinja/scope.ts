// The scopes of @huggingface/jinja as the loop memo and its compiled checks
// see them: the AST node type, a scope's variables, and name resolution.
import type { Value } from "./values.ts";

/** A template AST node. */
export type Node = { type: string } & Record<string, unknown>;

/** A scope of @huggingface/jinja: its variables and its parent. */
export interface Scope {
  readonly variables: Map<string, Value>;
  readonly parent?: Scope;
  setVariable(name: string, value: Value): Value;
}

/** The scope that defines `name`, seen from `scope` (as @huggingface/jinja resolves it). */
export function resolve(scope: Scope, name: string): Scope | undefined {
  let found: Scope | undefined = scope;
  while (found !== undefined && !found.variables.has(name)) {
    found = found.parent;
  }
  return found;
}
