// Whether an expression cannot raise in a scope: what lets a reused loop
// item skip a value it read only to set a variable it never read again
// (memo.ts). Such a value reaches nothing the item shows, but a render in
// which evaluating it raises fails, so a reuse must know it would not. A
// few shapes are known to be total over the types their names hold now
// (lengths of lists, integer arithmetic on loop indices, comparisons);
// anything else is evaluated.
import { type FilterCall, filterName } from "./ast.ts";
import { LoopFields } from "./loop_fields.ts";
import { type Node, resolve, type Scope } from "./scope.ts";

/** The loop fields that always hold an integer. */
const INTEGER_FIELDS: ReadonlySet<string> = new Set([
  "index",
  "index0",
  "revindex",
  "revindex0",
  "length",
]);

/** Value types whose `length` filter never raises. */
const SIZED: ReadonlySet<string> = new Set([
  "ArrayValue",
  "TupleValue",
  "StringValue",
  "ObjectValue",
]);

/** What a total expression gives: an integer, or anything. */
type Kind = "integer" | "any";

/**
 * Whether evaluating `node` in `scope` cannot raise, judged by its shape
 * and by the types its names hold there (never by their values).
 */
export function neverRaises(node: Node, scope: Scope): boolean {
  return typesRelied(node, scope) !== null;
}

/**
 * The names whose types make `node` unable to raise in `scope` (besides
 * `loop`, this loop's own), or null when it may raise.
 */
export function typesRelied(node: Node, scope: Scope): string[] | null {
  const names: string[] = [];
  return kindOf(node, scope, names) === null ? null : names;
}

/** The kind a total expression gives, or null for one that may raise. */
function kindOf(node: Node, scope: Scope, names: string[]): Kind | null {
  switch (node.type) {
    case "IntegerLiteral":
      return "integer";
    case "StringLiteral":
    case "Identifier":
      // A name not found is an Undefined, not an error.
      return "any";
    case "MemberExpression": {
      const object = node["object"] as Node;
      const property = node["property"] as Node;
      if (node["computed"] || object.type !== "Identifier") return null;
      const name = object["value"] as string;
      const value = resolve(scope, name)?.variables.get(name);
      return value?.value instanceof LoopFields &&
          INTEGER_FIELDS.has(property["value"] as string)
        ? "integer"
        : null;
    }
    case "FilterExpression": {
      const operand = node["operand"] as Node;
      if (
        filterName(node["filter"] as FilterCall) !== "length" ||
        operand.type !== "Identifier"
      ) return null;
      const name = operand["value"] as string;
      const value = resolve(scope, name)?.variables.get(name);
      names.push(name);
      return value !== undefined && SIZED.has(value.type) ? "integer" : null;
    }
    case "UnaryExpression":
      return (node["operator"] as { value: string }).value === "not" &&
          kindOf(node["argument"] as Node, scope, names) !== null
        ? "any"
        : null;
    case "BinaryExpression": {
      const operator = (node["operator"] as { value: string }).value;
      const left = kindOf(node["left"] as Node, scope, names);
      const right = kindOf(node["right"] as Node, scope, names);
      if (left === null || right === null) return null;
      if (["and", "or", "==", "!="].includes(operator)) return "any";
      const integers = left === "integer" && right === "integer";
      if (["+", "-", "*"].includes(operator)) {
        return integers ? "integer" : null;
      }
      return integers && ["<", ">", "<=", ">="].includes(operator)
        ? "any"
        : null;
    }
    default:
      return null;
  }
}
