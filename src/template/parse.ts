// Parses a chat template as transformers' jinja2 environment reads it:
// CR LF and lone CR become LF, `trim_blocks` and `lstrip_blocks` are on, and
// `{% generation %}` is a block tag that renders its body.
import { parse, tokenize } from "@huggingface/jinja";

/** The tree @huggingface/jinja parses a template into. */
export type Program = ReturnType<typeof parse>;

/**
 * Parses a template's text.
 *
 * @param source The template text.
 * @returns The parsed program, not yet rewritten.
 * @throws {SyntaxError} (or the package's `Error`) If it does not parse.
 */
export function parseTemplate(source: string): Program {
  const normalised = source.replace(/\r\n?/g, "\n")
    // transformers' {% generation %} renders its body; as a real block tag
    // (unlike @huggingface/jinja's textual removal) it keeps jinja2's
    // whitespace control around it.
    .replace(/\{%([-+]?)\s*generation\s*([-+]?)%\}/g, "{%$1 if true $2%}")
    .replace(/\{%([-+]?)\s*endgeneration\s*([-+]?)%\}/g, "{%$1 endif $2%}");
  return parse(
    tokenize(normalised, { lstrip_blocks: true, trim_blocks: true }),
  );
}
