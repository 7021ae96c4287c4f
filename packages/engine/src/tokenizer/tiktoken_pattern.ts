/**
 * A tiktoken split pattern (`pat_str`, compiled by the Rust `fancy_regex`
 * crate over the `regex` crate's syntax) as a JavaScript RegExp with the
 * `v` flag, for the constructs the tiktoken vocabularies use: Unicode
 * classes, `\s` as Unicode White_Space (JavaScript's `\s` has U+FEFF and
 * lacks U+0085), a bare script name (`\p{Han}`: the crate reads it as
 * Script, not Script_Extensions), class intersection (`[A&&[^B]]`), and
 * `(?i:...)` over ASCII letters, spelled out with the crate's simple case
 * folds (`s` also matches U+017F, `k` U+212A) since Node 20 lacks RegExp
 * modifiers. Any other construct is refused rather than guessed.
 *
 * @module
 */

const FOLDS: Readonly<Record<string, string>> = { s: "sSſ", k: "kKK" };

/**
 * Translates a split pattern, or gives `undefined` for a construct it does
 * not translate.
 *
 * @example Cut contractions and words
 * ```ts
 * import { tiktokenPattern } from "./tiktoken_pattern.ts";
 * const regex = tiktokenPattern(String.raw`(?i:'s|'t)|\p{L}+|\s+`)!;
 * console.assert("it'S ok".match(regex)!.join("|") === "it|'S| |ok");
 * ```
 *
 * @param pattern The Python source's pattern string.
 * @returns A global RegExp, or `undefined`.
 */
export function tiktokenPattern(pattern: string): RegExp | undefined {
  let out = "";
  for (let at = 0; at < pattern.length;) {
    const char = pattern[at]!;
    let piece: [string, number] | undefined;
    if (char === "[") piece = charClass(pattern, at);
    else if (char === "\\") piece = escape(pattern, at);
    else if (pattern.startsWith("(?i:", at)) piece = folded(pattern, at);
    else if (char === "(") {
      // A group, non-capturing or a lookahead; `(?<=`, `(?P<` and the like are refused.
      const group = /^\((?:\?[:=!])?/.exec(pattern.slice(at))![0];
      if (group === "(" && pattern[at + 1] === "?") return undefined;
      piece = [group, at + group.length];
    } else if (/[\w '"|?*+)\-.:;,<>=!/]/.test(char)) piece = [char, at + 1];
    else if (char === "{") {
      const counted = /^\{\d+(?:,\d*)?\}/.exec(pattern.slice(at))?.[0];
      piece = counted === undefined
        ? undefined
        : [counted, at + counted.length];
    }
    if (piece === undefined) return undefined;
    out += piece[0];
    at = piece[1];
  }
  try {
    return new RegExp(out, "gv");
  } catch {
    return undefined;
  }
}

/** An escape at `at`: `\s`, `\S`, `\p{..}`, `\P{..}`, `\r`, `\n`, `\t` or escaped punctuation. */
function escape(pattern: string, at: number): [string, number] | undefined {
  const next = pattern[at + 1] ?? "";
  if (next === "s") return ["\\p{White_Space}", at + 2];
  if (next === "S") return ["\\P{White_Space}", at + 2];
  if ("rnt".includes(next) || /[^\w\s]/.test(next)) {
    return [`\\${next}`, at + 2];
  }
  const property = /^\\([pP])\{(\w+)\}/.exec(pattern.slice(at));
  if (property === null) return undefined;
  const [whole, p, name] = property;
  // A general category stays; Han is the only script the vocabularies name.
  if (name === "Han") return [`\\${p}{sc=Han}`, at + whole.length];
  if (
    !/^(?:L[ultmo]?|M[nce]?|N[dlo]?|P[cdseifo]?|S[mcko]?|Z[slp]?)$/.test(name!)
  ) {
    return undefined;
  }
  return [whole, at + whole.length];
}

/**
 * A class at `at`, its `&&` operands each a class of their own (the `v`
 * flag forbids mixing a union with an intersection).
 */
function charClass(
  pattern: string,
  at: number,
): [string, number] | undefined {
  let i = at + 1;
  const negated = pattern[i] === "^";
  if (negated) i++;
  const operands: string[] = [];
  let items = "";
  while (i < pattern.length && pattern[i] !== "]") {
    let piece: [string, number] | undefined;
    if (pattern.startsWith("&&", i)) {
      operands.push(`[${items}]`);
      items = "";
      piece = ["", i + 2];
    } else if (pattern[i] === "[") piece = charClass(pattern, i);
    else if (pattern[i] === "\\") piece = escape(pattern, i);
    else if (/[\w '"]/.test(pattern[i]!)) piece = [pattern[i]!, i + 1];
    else if (pattern[i] === "/") piece = ["\\/", i + 1];
    if (piece === undefined) return undefined;
    items += piece[0];
    i = piece[1];
  }
  if (i >= pattern.length) return undefined;
  const body = operands.length === 0
    ? items
    : [...operands, `[${items}]`].join("&&");
  return [`[${negated ? "^" : ""}${body}]`, i + 1];
}

/** `(?i:...)` over letters, apostrophes and `|`, each letter as a class of its case folds. */
function folded(pattern: string, at: number): [string, number] | undefined {
  const end = pattern.indexOf(")", at);
  const body = pattern.slice(at + 4, end);
  if (end < 0 || !/^[A-Za-z'|]*$/.test(body)) return undefined;
  const spelled = body.replace(/[A-Za-z]/g, (letter) => {
    const lower = letter.toLowerCase();
    return `[${FOLDS[lower] ?? lower + lower.toUpperCase()}]`;
  });
  return [`(?:${spelled})`, end + 1];
}
