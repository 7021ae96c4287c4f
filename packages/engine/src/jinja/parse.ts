// Parses a chat template as transformers' jinja2 environment reads it:
// CR LF and lone CR become LF, `trim_blocks` and `lstrip_blocks` are on, and
// `{% generation %}` is a block tag that renders its body. `{% with %}` and
// `{% block %}`, which @huggingface/jinja does not parse, are read as call
// blocks and marked on the tree (see the interpreter's `evaluateCallStatement`).
import { parse, tokenize } from "@huggingface/jinja";

/** The tree @huggingface/jinja parses a template into. */
export type Program = ReturnType<typeof parse>;

type Token = ReturnType<typeof tokenize>[number];
type Node = { type: string } & Record<string, unknown>;

/** The callee the statements are read through (a name no template uses). */
const WITH = "__ic_with";
const BLOCK = "__ic_block";

/** `{% with a = x, b = y %}`: its names, and their values in the outer scope. */
export interface WithMark {
  readonly kind: "with";
  readonly names: readonly string[];
}

/** `{% block name [scoped] [required] %}`: rendered in place. */
export interface BlockMark {
  readonly kind: "block";
  readonly name: string;
  readonly scoped: boolean;
  readonly required: boolean;
}

/** The key of a call statement's mark. */
export const SCOPE_MARK = "__ic_scope";
/** The key of a `with`'s value expressions (walked and rewritten like any child). */
export const WITH_VALUES = "__ic_with_values";

/**
 * Rewrites the tokens of `{% with %}` and `{% block %}` (and their ends)
 * into call blocks of {@linkcode WITH} and {@linkcode BLOCK}.
 */
function readScopes(tokens: Token[]): Token[] {
  const Token = tokens[0]?.constructor as
    | (new (value: string, type: string) => Token)
    | undefined;
  if (Token === undefined) return tokens;
  const token = (value: string, type: string) => new Token(value, type);
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

/** Marks the call statements read from `with` and `block`; returns the block names. */
function markScopes(value: unknown, blocks: string[]): void {
  if (Array.isArray(value)) {
    for (const item of value) markScopes(item, blocks);
    return;
  }
  if (typeof value !== "object" || value === null || !("type" in value)) {
    return;
  }
  const node = value as Node;
  if (node.type === "CallStatement") {
    const call = node["call"] as Node;
    const callee = call["callee"] as Node;
    const args = call["args"] as Node[];
    if (callee.type === "Identifier" && callee["value"] === WITH) {
      const names: string[] = [];
      const values: Node[] = [];
      for (const arg of args) {
        if (arg.type !== "KeywordArgumentExpression") {
          throw new SyntaxError("Expected `name = value` in a with statement");
        }
        names.push((arg["key"] as Node)["value"] as string);
        values.push(arg["value"] as Node);
      }
      node[SCOPE_MARK] = { kind: "with", names } satisfies WithMark;
      node[WITH_VALUES] = values;
      node["call"] = null;
    } else if (callee.type === "Identifier" && callee["value"] === BLOCK) {
      const [name, ...flags] = args.map((arg) => arg["value"] as string);
      for (const flag of flags) {
        if (flag !== "scoped" && flag !== "required") {
          throw new SyntaxError(
            "Expected scoped or required after a block name",
          );
        }
      }
      node[SCOPE_MARK] = {
        kind: "block",
        name: name!,
        scoped: flags.includes("scoped"),
        required: flags.includes("required"),
      } satisfies BlockMark;
      node["call"] = null;
      blocks.push(name!);
    }
  }
  for (const key of Object.keys(node)) {
    if (key !== "type") markScopes(node[key], blocks);
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
 * @returns The parsed program, not yet rewritten, and its block names.
 * @throws {SyntaxError} (or the package's `Error`) If it does not parse.
 */
export function parseTemplate(source: string): Parsed {
  const normalised = source.replace(/\r\n?/g, "\n")
    // transformers' {% generation %} renders its body; as a real block tag
    // (unlike @huggingface/jinja's textual removal) it keeps jinja2's
    // whitespace control around it.
    .replace(/\{%([-+]?)\s*generation\s*([-+]?)%\}/g, "{%$1 if true $2%}")
    .replace(/\{%([-+]?)\s*endgeneration\s*([-+]?)%\}/g, "{%$1 endif $2%}");
  const program = parse(
    readScopes(
      tokenize(normalised, { lstrip_blocks: true, trim_blocks: true }),
    ),
  );
  const blocks: string[] = [];
  markScopes(program, blocks);
  return { program, blocks };
}
