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
  "format",
  "items",
  "keys",
  "values",
  "find",
  "rfind",
  "index",
  "count",
  "splitlines",
  "isdigit",
  "isalpha",
  "isalnum",
  "islower",
  "isupper",
  "isspace",
  "zfill",
  "rsplit",
  "partition",
  "rpartition",
  "join",
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
  "dictsort",
  "items",
  "selectattr",
  "rejectattr",
  "select",
  "reject",
  "wordcount",
  "center",
  "format",
  "truncate",
  "groupby",
  "sum",
  "max",
  "min",
  "batch",
  "slice",
  "indent",
  "unique",
  "round",
  "abs",
  "list",
  "int",
  "float",
  "attr",
  "reverse",
  "first",
  "last",
  "lower",
  "upper",
  "replace",
  "sort",
  "e",
  "escape",
  "forceescape",
  "striptags",
  "map",
];

/**
 * jinja2's filters that neither this layer rewrites nor it replaces:
 * @huggingface/jinja's own are right for these.
 */
const NATIVE_FILTERS: ReadonlySet<string> = new Set(["default", "d", "safe"]);

/** The global a filter the renderer does not have calls: jinja2's, or none. */
export const MISSING_FILTER = "__ic_missing_filter";

/** The global that checks a called name is defined. */
export const CALLABLE = "__ic_callable";
/** The global that makes an undefined loop iterable empty. */
export const ITERABLE = "__ic_iterable";
/** {@linkcode ITERABLE} for `for a, b in ...`: tuples unpack like lists. */
export const UNPACK = "__ic_iterable_unpack";
/** The global that runs a test (`x is name`). */
export const TEST = "__ic_test";

/** The global called for every printed expression (`{{ x }}`). */
export const PRINT = "__ic_print";
/** The global called for `==` and `!=` (Python equality). */
export const EQUALS = "__ic_eq";
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

const StringLiteral = (parse(tokenize("{{ 'a' }}")).body[0] as unknown as Node)
  .constructor as NodeClass;

function stringLiteral(value: string): Node {
  return new StringLiteral(value);
}

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
    if (callee.type === "Identifier") {
      node["callee"] = call(CALLABLE, [
        callee,
        stringLiteral(callee["value"] as string),
      ]);
      return node;
    }
  }
  if (node.type === "FilterExpression") {
    const [name, args] = filterName(node["filter"] as Node);
    if (FILTERS.includes(name)) {
      return call(`__ic_filter_${name}`, [node["operand"], ...args]);
    }
    if (!NATIVE_FILTERS.has(name)) {
      // jinja2 raises where it runs (or does not compile the template), or
      // has a filter the renderer lacks.
      return call(MISSING_FILTER, [node["operand"], stringLiteral(name)]);
    }
  }
  if (node.type === "For") {
    const iterable = node["iterable"] as Node;
    const wrap = (node["loopvar"] as Node).type === "TupleLiteral"
      ? UNPACK
      : ITERABLE;
    if (iterable.type === "SelectExpression") {
      iterable["lhs"] = call(wrap, [iterable["lhs"]]);
    } else node["iterable"] = call(wrap, [iterable]);
    return node;
  }
  if (node.type === "TestExpression") {
    const test = node["test"] as Node;
    const name = test["value"] as string;
    const result = call(TEST, [node["operand"], stringLiteral(name)]);
    if (!node["negate"]) return result;
    return call("__ic_not", [result]);
  }
  if (node.type === "BinaryExpression") {
    const operator = (node["operator"] as { value: string }).value;
    if (operator === "~") return call(CONCAT, [node["left"], node["right"]]);
    if (operator === "==" || operator === "!=") {
      const eq = call(EQUALS, [node["left"], node["right"]]);
      return operator === "==" ? eq : call("__ic_not", [eq]);
    }
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
    if (
      record.type === "FilterExpression" && key === "filter" &&
      (child as Node).type === "CallExpression"
    ) {
      // A filter call names a filter, not a variable: rewrite only its args.
      const filterCall = child as Node;
      filterCall["args"] = rewrite(filterCall["args"]);
      continue;
    }
    record[key] = BLOCKS.has(key) && Array.isArray(child)
      ? child.map((s) => printed(rewrite(s)))
      : rewrite(child);
  }
  return transform(record);
}
