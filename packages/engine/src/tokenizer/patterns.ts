/**
 * The patterns of `tokenizer.json` (a Split pre-tokenizer's, a Replace
 * normalizer's) as the Rust `tokenizers` crate matches them, and the
 * character classes of its built-in pre-tokenizers. A `Regex` pattern is
 * Oniguruma syntax, which the crate compiles; `@huggingface/tokenizers`
 * translates it into a JavaScript RegExp in its exported
 * `SplitPreTokenizer` class, whose public `pattern` is read here once per
 * pattern, copied, and never written. The crate's `\s` is Unicode
 * White_Space (U+0085 is whitespace, U+FEFF is not), as the translation
 * and the classes below write it; JavaScript's own `\s` is the other way
 * round.
 *
 * @module
 */
import { SplitPreTokenizer } from "@huggingface/tokenizers";

/** The Rust regex crate's `\w`: Alphabetic, marks, decimal digits, connectors, join controls. */
export const WORD = String.raw`\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}`;
/** The crate's `\s` and `char::is_whitespace`. */
export const SPACE = String.raw`\p{White_Space}`;

const ONE_SPACE = new RegExp(`^[${SPACE}]$`, "u");

/**
 * Whether a UTF-16 code unit is whitespace to the crate (every White_Space
 * character is in the BMP).
 *
 * @param code The code unit.
 * @returns Whether it is whitespace.
 */
export function isSpace(code: number): boolean {
  return ONE_SPACE.test(String.fromCharCode(code));
}

/** Where a pattern matches: each match's start and end, in order, none overlapping. */
export type Matcher = (text: string) => Iterable<readonly [number, number]>;

/**
 * A pattern of tokenizer.json (`{ "String": ... }` or `{ "Regex": ... }`)
 * as a matcher, or `undefined` for a pattern the engine does not match as
 * the crate does (an empty string, a regex the translation refuses).
 *
 * @example Match a literal and a regex
 * ```ts
 * import { matcherOf } from "./patterns.ts";
 * const digits = matcherOf({ Regex: "\\p{N}{1,3}" })!;
 * console.assert([...digits("a1234")].join(";") === "1,4;4,5");
 * const space = matcherOf({ String: " " })!;
 * console.assert([...space("a b")].join(";") === "1,2");
 * ```
 *
 * @param pattern The pattern object.
 * @returns The matcher, or `undefined`.
 */
export function matcherOf(pattern: unknown): Matcher | undefined {
  const regex = regexOf(pattern);
  if (regex !== undefined) {
    return (text) => regexMatches(text, regex);
  }
  if (!isRecord(pattern) || typeof pattern.String !== "string") return;
  const literal = pattern.String;
  if (literal === "") return undefined;
  return (text) => literalMatches(text, literal);
}

/**
 * A `{ "Regex": ... }` pattern as a global RegExp of the engine's own, or
 * `undefined` for any other pattern or a regex that does not compile.
 *
 * @param pattern The pattern object.
 * @returns The RegExp, or `undefined`.
 */
export function regexOf(pattern: unknown): RegExp | undefined {
  if (!isRecord(pattern) || typeof pattern.Regex !== "string") return;
  let compiled: RegExp | null;
  try {
    compiled = new SplitPreTokenizer({
      type: "Split",
      pattern: { Regex: pattern.Regex },
      behavior: "Isolated",
      invert: false,
    }).pattern;
  } catch {
    return undefined;
  }
  if (!(compiled instanceof RegExp) || !compiled.global) return undefined;
  return new RegExp(compiled.source, compiled.flags);
}

function* regexMatches(
  text: string,
  regex: RegExp,
): Iterable<readonly [number, number]> {
  for (const match of text.matchAll(regex)) {
    yield [match.index, match.index + match[0].length];
  }
}

function* literalMatches(
  text: string,
  literal: string,
): Iterable<readonly [number, number]> {
  for (let at = text.indexOf(literal); at >= 0;) {
    yield [at, at + literal.length];
    at = text.indexOf(literal, at + literal.length);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
