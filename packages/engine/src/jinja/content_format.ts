/**
 * How vLLM decides whether a chat template reads `message.content` as a
 * string or as a list of OpenAI-style parts: from the template's syntax
 * tree, by the rule of `_detect_content_format` and its `_iter_nodes_*`
 * helpers (`vllm/renderers/hf.py`, vLLM main of 2026-05-24, commit
 * `28be48fa9`), read over @huggingface/jinja's tree where vLLM reads
 * jinja2's.
 *
 * The template takes parts when a `for` loop iterates `<m>.content` or
 * `<m>['content']` (possibly filtered, tested or sliced), where `<m>` is
 * the target of a `for` over `messages` or over a variable assigned from
 * it (the same way, transitively); or when a `for` iterates a variable
 * named `content`. vLLM's helpers assert that the targets they meet are
 * plain names; a failed assertion, like a template that does not parse,
 * gives the default, "string".
 *
 * @module
 */
import { compileRefusal } from "./compile_check.ts";
import { parseTemplate } from "./parse.ts";
import type { Node } from "./scope.ts";

/** How a template reads `message.content`: a string, or a list of parts. */
export type ContentFormat = "string" | "openai";

/** One of vLLM's assertions failed: the rule gives its default. */
class NotAName extends Error {}

/** `varname`, read as a variable (jinja2's `Name` in load context). */
function isVar(node: Node, varname: string): boolean {
  return node.type === "Identifier" && node["value"] === varname;
}

/** `varname.key` or `varname['key']`. */
function isAttr(node: Node, varname: string, key: string): boolean {
  if (node.type !== "MemberExpression") return false;
  const property = node["property"] as Node;
  const named = node["computed"]
    ? property.type === "StringLiteral" && property["value"] === key
    : property.type === "Identifier" && property["value"] === key;
  return named && isVar(node["object"] as Node, varname);
}

/**
 * The access itself, or under filters, a test (not a negated one: jinja2
 * wraps that in a `Not`, which vLLM does not look through) or a slice.
 */
function isVarOrElems(node: Node, varname: string, key?: string): boolean {
  if (node.type === "FilterExpression") {
    return isVarOrElems(node["operand"] as Node, varname, key);
  }
  if (node.type === "TestExpression" && !node["negate"]) {
    return isVarOrElems(node["operand"] as Node, varname, key);
  }
  if (
    node.type === "MemberExpression" && node["computed"] &&
    (node["property"] as Node).type === "SliceExpression"
  ) {
    return isVarOrElems(node["object"] as Node, varname, key);
  }
  return key === undefined ? isVar(node, varname) : isAttr(node, varname, key);
}

/** The `for` and value-`set` statements, in document order. */
function statements(root: Node): { loops: Node[]; sets: Node[] } {
  const loops: Node[] = [];
  const sets: Node[] = [];
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    if (typeof value !== "object" || value === null || !("type" in value)) {
      return;
    }
    const node = value as Node;
    if (node.type === "For") loops.push(node);
    // `{% set x %}...{% endset %}` is jinja2's AssignBlock, which vLLM skips.
    if (node.type === "Set" && node["value"] !== null) sets.push(node);
    for (const key of Object.keys(node)) {
      if (key !== "type") visit(node[key]);
    }
  };
  visit(root);
  return { loops, sets };
}

/** What a loop iterates: jinja2 keeps a loop's `if` apart from its iterable. */
function iterated(loop: Node): Node {
  const iterable = loop["iterable"] as Node;
  return iterable.type === "SelectExpression"
    ? iterable["lhs"] as Node
    : iterable;
}

function targetName(node: Node): string {
  if (node.type !== "Identifier") throw new NotAName();
  return node["value"] as string;
}

/** `messages` and every variable assigned from it, transitively. */
function messagesNames(sets: readonly Node[]): string[] {
  const names = ["messages"];
  const pending = ["messages"];
  const seen = new Set<string>();
  while (pending.length > 0) {
    const name = pending.shift()!;
    // vLLM revisits a name assigned in a cycle forever; once is the same.
    if (seen.has(name)) continue;
    seen.add(name);
    for (const set of sets) {
      if (!isVarOrElems(set["value"] as Node, name)) continue;
      const assigned = targetName(set["assignee"] as Node);
      names.push(assigned);
      if (assigned !== name) pending.push(assigned);
    }
  }
  return names;
}

function detect(program: Node): ContentFormat {
  const { loops, sets } = statements(program);
  const listNames = messagesNames(sets);
  const messageNames: string[] = [];
  for (const loop of loops) {
    const iterable = iterated(loop);
    if (listNames.some((name) => isVarOrElems(iterable, name))) {
      messageNames.push(targetName(loop["loopvar"] as Node));
    }
  }
  for (const loop of loops) {
    const iterable = iterated(loop);
    const overContent = messageNames.some((name) =>
      isVarOrElems(iterable, name, "content")
    ) ||
      isVar(iterable, "content");
    if (overContent) {
      targetName(loop["loopvar"] as Node);
      return "openai";
    }
  }
  return "string";
}

/**
 * The content format vLLM detects for a template.
 *
 * @example A loop over a message's parts
 * ```ts
 * import { contentFormatOf } from "./content_format.ts";
 * import { parseTemplate } from "./parse.ts";
 * import { strictEqual } from "node:assert/strict";
 *
 * const source = "{% for m in messages %}{% for p in m.content %}{{ p.text }}{% endfor %}{% endfor %}";
 * strictEqual(contentFormatOf(parseTemplate(source).program), "openai");
 * ```
 *
 * @param program The template's tree from `parseTemplate`.
 * @returns `"openai"` when the rule finds a loop over message content, else `"string"`.
 */
export function contentFormatOf(program: unknown): ContentFormat {
  try {
    return detect(program as Node);
  } catch (error) {
    if (error instanceof NotAName) return "string";
    throw error;
  }
}

/**
 * {@linkcode contentFormatOf} from a template's text; one that does not
 * parse, or that jinja2 would not compile, gets vLLM's default, `"string"`.
 *
 * @param source The template text.
 * @returns The content format.
 */
export function detectContentFormat(source: string): ContentFormat {
  let parsed;
  try {
    parsed = parseTemplate(source);
  } catch {
    return "string";
  }
  return compileRefusal(parsed) === null
    ? contentFormatOf(parsed.program)
    : "string";
}
