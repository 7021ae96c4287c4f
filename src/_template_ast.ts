// Rewrites a parsed @huggingface/jinja program so that the operations whose
// results differ from Python jinja2 call our own globals instead.
import { parse, tokenize } from "@huggingface/jinja";

type Node = { type: string } & Record<string, unknown>;
type NodeClass = new (...args: unknown[]) => Node;

/** Method names rewritten to `__ic_method_<name>(object, ...args)`. */
export const METHODS: readonly string[] = [
  "strip",
  "lstrip",
  "rstrip",
  "split",
  "title",
  "capitalize",
];

/** Filter names rewritten to `__ic_filter_<name>(operand, ...args)`. */
export const FILTERS: readonly string[] = [
  "tojson",
  "trim",
  "title",
  "capitalize",
  "length",
  "count",
  "string",
  "join",
];

/** The global called for every printed expression (`{{ x }}`). */
export const PRINT = "__ic_print";
/** The global called for the `~` operator. */
export const CONCAT = "__ic_concat";

// The AST classes are not exported by the package; a parsed probe hands out
// instances of the ones we build.
const probe = parse(tokenize("{{ f(x) }}")).body[0] as unknown as Node;
const CallExpression = probe.constructor as NodeClass;
const Identifier = (probe["callee"] as Node).constructor as NodeClass;
const Expression = Object.getPrototypeOf(CallExpression.prototype)
  .constructor as NodeClass;
const Statement = Object.getPrototypeOf(Expression.prototype)
  .constructor as NodeClass;

const BLOCKS = new Set(["body", "alternate", "defaultBlock"]);

function call(name: string, args: unknown[]): Node {
  return new CallExpression(new Identifier(name), args);
}

function filterName(filter: Node): [string, unknown[]] {
  if (filter.type === "Identifier") return [filter["value"] as string, []];
  const callee = filter["callee"] as Node;
  const name = callee.type === "Identifier" ? callee["value"] as string : "";
  return [name, filter["args"] as unknown[]];
}

function transform(node: Node): Node {
  if (node.type === "CallExpression") {
    const callee = node["callee"] as Node;
    const property = callee["property"] as Node | undefined;
    if (
      callee.type === "MemberExpression" && !callee["computed"] &&
      property?.type === "Identifier" &&
      METHODS.includes(property["value"] as string)
    ) {
      const args = node["args"] as unknown[];
      return call(`__ic_method_${property["value"]}`, [
        callee["object"],
        ...args,
      ]);
    }
  }
  if (node.type === "FilterExpression") {
    const [name, args] = filterName(node["filter"] as Node);
    if (FILTERS.includes(name)) {
      return call(`__ic_filter_${name}`, [node["operand"], ...args]);
    }
  }
  if (
    node.type === "BinaryExpression" &&
    (node["operator"] as { value: string }).value === "~"
  ) {
    return call(CONCAT, [node["left"], node["right"]]);
  }
  return node;
}

function printed(statement: unknown): unknown {
  return statement instanceof Expression &&
      (statement as Node).type !== "StringLiteral"
    ? call(PRINT, [statement])
    : statement;
}

/** Rewrites a parsed node tree in place (children first) and returns its root. */
export function rewrite(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(rewrite);
  if (node instanceof Map) {
    return new Map(Array.from(node, ([k, v]) => [rewrite(k), rewrite(v)]));
  }
  if (!(node instanceof Statement)) return node;
  const record = node as Node;
  for (const key of Object.keys(record)) {
    const child = record[key];
    record[key] = BLOCKS.has(key) && Array.isArray(child)
      ? child.map((s) => printed(rewrite(s)))
      : rewrite(child);
  }
  return transform(record);
}
