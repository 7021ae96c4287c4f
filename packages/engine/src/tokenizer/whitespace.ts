/**
 * The Rust `tokenizers` crate's whitespace in @huggingface/tokenizers'
 * pre-tokenizers (0.2.x). The Rust crate splits on Unicode White_Space
 * (its regexes' `\s`, `char::is_whitespace`): U+0085 is whitespace, U+FEFF
 * is not. JavaScript's `\s` is the other way round, and `\w` without the `u`
 * flag is ASCII only. The library already reads a tokenizer.json `Split`
 * regex that way; its built-in patterns (ByteLevel with `use_regex`,
 * Whitespace, WhitespaceSplit, BertPreTokenizer) are rewritten here.
 *
 * @module
 */

/** Rust regex's `\w`: Alphabetic, marks, decimal digits, connectors, join controls. */
const WORD = String.raw`\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}`;
/** The Whitespace pre-tokenizer's `\w+|[^\w\s]+`, with the Rust crate's classes. */
const WORDS = new RegExp(`[${WORD}]+|[^${WORD}\\p{White_Space}]+`, "gu");
const NON_SPACE = /\P{White_Space}+/gu;

/**
 * A RegExp whose `\s` and `\S` (not escaped themselves) mean Unicode
 * White_Space and its complement, as in the Rust crate.
 */
export function rustWhitespaceRegExp(pattern: RegExp): RegExp {
  const source = pattern.source.replace(
    /(\\*)\\([sS])/g,
    (whole, backslashes: string, letter: string) =>
      backslashes.length % 2 === 1
        ? whole
        : `${backslashes}\\${letter === "s" ? "p" : "P"}{White_Space}`,
  );
  const flags = pattern.flags.includes("u") || pattern.flags.includes("v")
    ? pattern.flags
    : pattern.flags + "u";
  return new RegExp(source, flags);
}

type PreTokenize = (text: string, options?: unknown) => string[];

/**
 * Rewrites, in place, the pre-tokenizers the library built from
 * `config` (tokenizer.json's `pre_tokenizer`) to split on the Rust
 * crate's whitespace; a Sequence's members in order.
 *
 * @param config The `pre_tokenizer` of tokenizer.json.
 * @param built The library's pre-tokenizer built from it.
 */
export function useRustWhitespace(config: unknown, built: unknown): void {
  rewrite(config, built, 0);
}

function rewrite(config: unknown, raw: unknown, depth: number): void {
  // The library's pre-tokenizers are callable objects (functions).
  if (depth > 8 || !isObject(config) || !isNode(raw)) return;
  const built = raw as Record<string, unknown>;
  switch (config.type) {
    case "Sequence": {
      const members = config.pretokenizers;
      const inner = built.tokenizers;
      if (!Array.isArray(members) || !Array.isArray(inner)) return;
      members.forEach((member, i) => rewrite(member, inner[i], depth + 1));
      return;
    }
    case "ByteLevel":
      if (built.pattern instanceof RegExp) {
        built.pattern = rustWhitespaceRegExp(built.pattern);
      }
      return;
    case "Whitespace":
      built.pre_tokenize_text =
        ((text: string) => text.match(WORDS) ?? []) satisfies PreTokenize;
      return;
    case "WhitespaceSplit":
      built.pre_tokenize_text =
        ((text: string) => text.match(NON_SPACE) ?? []) satisfies PreTokenize;
      return;
    case "BertPreTokenizer":
      if (built.pattern instanceof RegExp) {
        const pattern = rustWhitespaceRegExp(built.pattern);
        // The library trims with String.prototype.trim (U+FEFF included):
        // the pattern alone already leaves the crate's whitespace out.
        built.pre_tokenize_text = ((text: string) =>
          text.match(pattern) ?? []) satisfies PreTokenize;
      }
      return;
  }
}

function isNode(value: unknown): boolean {
  return typeof value === "function" || isObject(value);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
