// Parses a chat template as transformers' jinja2 environment reads it:
// CR LF and lone CR become LF, `trim_blocks` and `lstrip_blocks` are on, and
// `{% generation %}` is a block tag that renders its body. The tokens and
// the tree are @huggingface/jinja's public `tokenize()` and `parse()`;
// `{% with %}` and `{% block %}`, which its parser does not know, are handed
// to it as call blocks of names no template uses, and read back from the
// tree as nodes of their own (see ast.ts).
import { parse, tokenize } from "@huggingface/jinja";
import type { Block, Expr, Program, Stmt, With } from "./ast.ts";

type Token = ReturnType<typeof tokenize>[number];
type Node = { type: string } & Record<string, unknown>;

/** The callee the statements are read through (a name no template uses). */
const WITH = "__ic_with";
const BLOCK = "__ic_block";

/**
 * Rewrites the tokens of `{% with %}` and `{% block %}` (and their ends)
 * into call blocks of {@linkcode WITH} and {@linkcode BLOCK}.
 */
function readScopes(tokens: Token[]): Token[] {
  // `parse()` takes tokens as its typings declare them: a value and a type.
  const token = (value: string, type: Token["type"]): Token => ({
    value,
    type,
  });
  const out: Token[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const open = tokens[i]!;
    const word = tokens[i + 1];
    if (open.type !== "OpenStatement" || word?.type !== "Identifier") {
      out.push(open);
      continue;
    }
    let close = i + 2;
    while (close < tokens.length && tokens[close]!.type !== "CloseStatement") {
      close++;
    }
    const inner = tokens.slice(i + 2, close);
    if (word.value === "endwith" || word.value === "endblock") {
      out.push(open, token("endcall", "Identifier"));
      i = close - 1;
      continue;
    }
    if (word.value === "with") {
      out.push(
        open,
        token("call", "Identifier"),
        token(WITH, "Identifier"),
        token("(", "OpenParen"),
        ...inner,
        token(")", "CloseParen"),
      );
      i = close - 1;
      continue;
    }
    if (word.value === "block" && inner[0]?.type === "Identifier") {
      const flags = inner.slice(1).map((t) => t.value);
      out.push(
        open,
        token("call", "Identifier"),
        token(BLOCK, "Identifier"),
        token("(", "OpenParen"),
        token(inner[0].value, "StringLiteral"),
        ...flags.flatMap((flag) => [
          token(",", "Comma"),
          token(flag, "StringLiteral"),
        ]),
        token(")", "CloseParen"),
      );
      i = close - 1;
      continue;
    }
    out.push(open);
  }
  return out;
}

/** The statement a call block of {@linkcode WITH} or {@linkcode BLOCK} stands for. */
function scopeStatement(node: Node, blocks: string[]): With | Block | null {
  if (node.type !== "CallStatement") return null;
  const call = node["call"] as Node;
  const callee = call["callee"] as Node;
  const args = call["args"] as Node[];
  const body = node["body"] as Stmt[];
  if (callee.type !== "Identifier") return null;
  if (callee["value"] === WITH) {
    const names: string[] = [];
    const values: Expr[] = [];
    for (const arg of args) {
      if (arg.type !== "KeywordArgumentExpression") {
        throw new SyntaxError("Expected `name = value` in a with statement");
      }
      names.push((arg["key"] as Node)["value"] as string);
      values.push(arg["value"] as Expr);
    }
    return { type: "With", names, values, body };
  }
  if (callee["value"] !== BLOCK) return null;
  const [name, ...flags] = args.map((arg) => arg["value"] as string);
  for (const flag of flags) {
    if (flag !== "scoped" && flag !== "required") {
      throw new SyntaxError("Expected scoped or required after a block name");
    }
  }
  blocks.push(name!);
  return {
    type: "Block",
    name: name!,
    scoped: flags.includes("scoped"),
    required: flags.includes("required"),
    body,
  };
}

/**
 * Replaces, in place, the call blocks read from `with` and `block` with
 * their own nodes; collects the block names in document order.
 */
function readScopeStatements(value: unknown, blocks: string[]): void {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item = value[i];
      if (typeof item !== "object" || item === null || !("type" in item)) {
        continue;
      }
      value[i] = scopeStatement(item as Node, blocks) ?? item;
      readScopeStatements(value[i], blocks);
    }
    return;
  }
  if (typeof value !== "object" || value === null || !("type" in value)) {
    return;
  }
  const node = value as Node;
  for (const key of Object.keys(node)) {
    if (key !== "type") readScopeStatements(node[key], blocks);
  }
}

/** A parsed template: its tree, and the names of its blocks in order. */
export interface Parsed {
  readonly program: Program;
  readonly blocks: readonly string[];
}

/**
 * Parses a template's text.
 *
 * @param source The template text.
 * @returns The parsed program and its block names.
 * @throws {SyntaxError} (or the package's `Error`) If it does not parse.
 */
export function parseTemplate(source: string): Parsed {
  const normalised = source.replace(/\r\n?/g, "\n")
    // transformers' {% generation %} renders its body; as a block tag it
    // keeps jinja2's whitespace control around it.
    .replace(/\{%([-+]?)\s*generation\s*([-+]?)%\}/g, "{%$1 if true $2%}")
    .replace(/\{%([-+]?)\s*endgeneration\s*([-+]?)%\}/g, "{%$1 endif $2%}");
  const parsed = parse(
    readScopes(
      tokenize(normalised, { lstrip_blocks: true, trim_blocks: true }),
    ),
  );
  const blocks: string[] = [];
  readScopeStatements(parsed, blocks);
  // The public typings give every node as a `Statement` ({ type: string });
  // ast.ts spells out the shapes behind each type.
  return { program: parsed as Program, blocks };
}
