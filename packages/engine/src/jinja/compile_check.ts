// What jinja2 refuses when it compiles a template, so that transformers
// (and vLLM) refuse every request: a filter or test it does not know, used
// outside an `if` (inside one, jinja2 raises only where it runs), a block
// defined twice, a required block with content.
import { JINJA2_FILTERS, JINJA2_TESTS } from "./names.ts";
import { type FilterCall, filterName as nameOf } from "./ast.ts";
import type { Parsed } from "./parse.ts";
import type { Node } from "./scope.ts";

/** The name a filter expression or statement applies. */
function filterName(filter: Node): string {
  return nameOf(filter as FilterCall);
}

/**
 * Walks a tree with jinja2's frames: an `if` (its test and branches) and a
 * conditional expression open a soft frame, where an unknown filter or
 * test is only an error when reached; a loop body or `else`, a loop's
 * `if`, a macro, a call, filter or `set` block, `with` and `block` open a
 * frame of their own, which is not soft.
 */
function unknownName(value: unknown, soft: boolean): string | null {
  if (Array.isArray(value)) {
    for (const item of value) {
      const found = unknownName(item, soft);
      if (found !== null) return found;
    }
    return null;
  }
  if (typeof value !== "object" || value === null || !("type" in value)) {
    return null;
  }
  const node = value as Node;
  const walk = (child: unknown, inSoft = soft) => unknownName(child, inSoft);
  const first = (...found: (string | null)[]) =>
    found.find((f) => f !== null) ?? null;
  switch (node.type) {
    case "If":
      return first(
        walk(node["test"], true),
        walk(node["body"], true),
        walk(node["alternate"], true),
      );
    case "Ternary":
      return first(
        walk(node["condition"], true),
        walk(node["trueExpr"], true),
        walk(node["falseExpr"], true),
      );
    case "SelectExpression":
      return first(walk(node["lhs"], true), walk(node["test"], true));
    case "For": {
      const iterable = node["iterable"] as Node;
      const select = iterable.type === "SelectExpression";
      return first(
        walk(select ? iterable["lhs"] : iterable),
        select ? walk(iterable["test"], false) : null,
        walk(node["body"], false),
        walk(node["defaultBlock"], false),
      );
    }
    case "Macro":
      return first(walk(node["args"], false), walk(node["body"], false));
    case "CallStatement":
      return first(
        walk(node["call"]),
        walk(node["callerArgs"], false),
        walk(node["body"], false),
      );
    case "With":
      return first(walk(node["values"]), walk(node["body"], false));
    case "Block":
      return walk(node["body"], false);
    case "FilterStatement": {
      const name = filterName(node["filter"] as Node);
      if (!JINJA2_FILTERS.has(name)) return `No filter named '${name}'.`;
      return first(walk(node["filter"], false), walk(node["body"], false));
    }
    case "Set":
      return first(walk(node["value"]), walk(node["body"], false));
    case "FilterExpression": {
      const name = filterName(node["filter"] as Node);
      if (!soft && !JINJA2_FILTERS.has(name)) {
        return `No filter named '${name}'.`;
      }
      return first(walk(node["operand"]), walk(node["filter"]));
    }
    case "TestExpression": {
      const name = (node["test"] as Node)["value"] as string;
      if (!soft && !JINJA2_TESTS.has(name)) return `No test named '${name}'.`;
      return walk(node["operand"]);
    }
  }
  for (const key of Object.keys(node)) {
    if (key === "type") continue;
    const found = walk(node[key]);
    if (found !== null) return found;
  }
  return null;
}

/** A required block whose body holds more than whitespace. */
function filledRequiredBlock(value: unknown): string | null {
  if (Array.isArray(value)) {
    for (const item of value) {
      const found = filledRequiredBlock(item);
      if (found !== null) return found;
    }
    return null;
  }
  if (typeof value !== "object" || value === null || !("type" in value)) {
    return null;
  }
  const node = value as Node;
  if (node.type === "Block" && node["required"]) {
    const body = node["body"] as Node[];
    const empty = body.every((s) =>
      s.type === "Comment" ||
      s.type === "StringLiteral" && /^\s*$/.test(s["value"] as string)
    );
    if (!empty) {
      return "Required blocks can only contain comments or whitespace";
    }
  }
  for (const key of Object.keys(node)) {
    if (key === "type") continue;
    const found = filledRequiredBlock(node[key]);
    if (found !== null) return found;
  }
  return null;
}

/**
 * Why jinja2 would refuse to compile the template, or null.
 *
 * @param parsed The template as `parseTemplate` read it.
 * @returns jinja2's reason, or null when it compiles.
 */
export function compileRefusal(parsed: Parsed): string | null {
  const seen = new Set<string>();
  for (const name of parsed.blocks) {
    if (seen.has(name)) return `block '${name}' defined twice`;
    seen.add(name);
  }
  return unknownName(parsed.program, false) ??
    filledRequiredBlock(parsed.program);
}
