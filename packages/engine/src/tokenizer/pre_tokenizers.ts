/**
 * The pre-tokenizers of `tokenizer.json` the engine runs as the Rust
 * `tokenizers` crate does (`pre_tokenizers/`): Split (every behavior,
 * inverted or not), Whitespace, WhitespaceSplit, BertPreTokenizer, and
 * ByteLevel alone or last in a Sequence. ByteLevel's byte mapping is left
 * to the model, which reads a word's UTF-8 bytes directly.
 *
 * @module
 */
import { type Matcher, matcherOf, regexOf, SPACE, WORD } from "./patterns.ts";

/** Cuts a stretch of normalized text into the words the model tokenizes. */
export interface PreTokenizer {
  /**
   * The words of a text, none empty.
   *
   * @param text The text.
   * @returns The words (behind ByteLevel, before its byte mapping).
   */
  split(text: string): string[];
  /** Whether the words are ByteLevel's, so that the model maps their bytes. */
  readonly byteLevel: boolean;
}

/** The non-empty pieces of a text. */
type Cut = (text: string) => string[];

/** ByteLevel's own regex (GPT-2's), with the crate's `\s`. */
const BYTE_LEVEL = new RegExp(
  String
    .raw`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^${SPACE}\p{L}\p{N}]+|[${SPACE}]+(?![^${SPACE}])|[${SPACE}]+`,
  "gu",
);
/** Whitespace's `\w+|[^\w\s]+` with the regex crate's classes. */
const WORDS = new RegExp(`[${WORD}]+|[^${WORD}${SPACE}]+`, "gu");
const NON_SPACE = new RegExp(`[^${SPACE}]+`, "gu");
/** BertPreTokenizer's punctuation: Unicode P*, and every ASCII punctuation character. */
const PUNCTUATION = String.raw`\p{P}!-/:-@\[-\x60{-~`;
const BERT = new RegExp(`[^${SPACE}${PUNCTUATION}]+|[${PUNCTUATION}]`, "gu");

/** How a Split treats its matches (`SplitDelimiterBehavior`). */
const BEHAVIORS = new Set([
  "Removed",
  "Isolated",
  "MergedWithPrevious",
  "MergedWithNext",
  "Contiguous",
]);

/**
 * The pre-tokenizer of a `pre_tokenizer` of tokenizer.json, or `undefined`
 * for one the engine does not run.
 *
 * @example Qwen's shape: a Split, then ByteLevel
 * ```ts
 * import { preTokenizerOf } from "./pre_tokenizers.ts";
 * const pre = preTokenizerOf({
 *   type: "Sequence",
 *   pretokenizers: [
 *     { type: "Split", pattern: { Regex: "\\p{N}|\\p{L}+" }, behavior: "Isolated", invert: false },
 *     { type: "ByteLevel", add_prefix_space: false, use_regex: false },
 *   ],
 * })!;
 * console.assert(pre.byteLevel && pre.split("ab12 c").join("|") === "ab|1|2| |c");
 * ```
 *
 * @param config The `pre_tokenizer` object.
 * @returns The pre-tokenizer, or `undefined`.
 */
export function preTokenizerOf(config: unknown): PreTokenizer | undefined {
  if (config === null) return { split: whole, byteLevel: false };
  if (!isRecord(config)) return undefined;
  const members = config.type === "Sequence" ? config.pretokenizers : [config];
  if (!Array.isArray(members)) return undefined;
  const cuts: Cut[] = [];
  let byteLevel = false;
  for (const [i, member] of members.entries()) {
    if (!isRecord(member)) return undefined;
    if (member.type === "ByteLevel") {
      // Words after the mapping would be the alphabet's characters.
      if (i !== members.length - 1) return undefined;
      const cut = byteLevelCut(member);
      if (cut === undefined) return undefined;
      if (cut !== null) cuts.push(cut);
      byteLevel = true;
      continue;
    }
    const cut = cutOf(member);
    if (cut === undefined) return undefined;
    cuts.push(cut);
  }
  return { split: chain(cuts), byteLevel };
}

function cutOf(config: Record<string, unknown>): Cut | undefined {
  switch (config.type) {
    case "Split":
      return splitCut(config);
    case "Whitespace":
      return matchesOf(WORDS);
    case "WhitespaceSplit":
      return matchesOf(NON_SPACE);
    case "BertPreTokenizer":
      return matchesOf(BERT);
    default:
      return undefined;
  }
}

/** A text as its one piece. */
const whole: Cut = (text) => [text];

/** The cuts one after the other, each over the pieces of the one before. */
function chain(cuts: readonly Cut[]): Cut {
  if (cuts.length <= 1) return cuts[0] ?? whole;
  return (text) => {
    let pieces = [text];
    for (const cut of cuts) {
      pieces = pieces.length === 1 ? cut(pieces[0]!) : pieces.flatMap(cut);
    }
    return pieces;
  };
}

/** The matches alone (an inverted pattern's Removed behavior); they are never empty. */
function matchesOf(regex: RegExp): Cut {
  return (text) => text.match(regex) ?? [];
}

/**
 * ByteLevel: a space before a piece not starting with one
 * (`add_prefix_space`), then its own regex, Isolated (`use_regex`, by
 * default on). `null` when it cuts nothing.
 */
function byteLevelCut(config: Record<string, unknown>): Cut | null | undefined {
  const prefix = config.add_prefix_space ?? false;
  const useRegex = config.use_regex ?? true;
  if (typeof prefix !== "boolean" || typeof useRegex !== "boolean") return;
  if (!prefix && !useRegex) return null;
  return (text) => {
    if (prefix && !text.startsWith(" ")) text = " " + text;
    return useRegex ? isolate(text, BYTE_LEVEL) : [text];
  };
}

/** A Split of the crate (`pre_tokenizers/split.rs`, `NormalizedString::split`). */
function splitCut(config: Record<string, unknown>): Cut | undefined {
  const { behavior, invert } = config;
  if (
    typeof behavior !== "string" || !BEHAVIORS.has(behavior) ||
    typeof invert !== "boolean"
  ) return undefined;
  const regex = regexOf(config.pattern);
  // The usual case, without the general path's offsets.
  if (regex !== undefined && behavior === "Isolated" && !invert) {
    return (text) => isolate(text, regex);
  }
  const matcher = matcherOf(config.pattern);
  if (matcher === undefined) return undefined;
  return (text) => {
    const out: string[] = [];
    for (const [start, end] of splits(text, matcher, behavior, invert)) {
      if (end > start) out.push(text.slice(start, end));
    }
    return out;
  };
}

/**
 * `NormalizedString::split`'s pieces: the text cut into matches and the
 * stretches between them, flagged (inverted, the flags flip), then kept,
 * dropped or joined by the behavior.
 */
function splits(
  text: string,
  matcher: Matcher,
  behavior: string,
  invert: boolean,
): [number, number][] {
  const flagged: [number, number, boolean][] = [];
  let end = 0;
  for (const [start, stop] of matcher(text)) {
    if (end !== start) flagged.push([end, start, invert]);
    flagged.push([start, stop, !invert]);
    end = stop;
  }
  if (end !== text.length) flagged.push([end, text.length, invert]);
  if (behavior === "MergedWithNext") flagged.reverse();
  const out: [number, number][] = [];
  let previous = false;
  for (const [start, stop, match] of flagged) {
    const last = out.at(-1);
    if (behavior === "Removed") {
      if (!match) out.push([start, stop]);
    } else if (behavior === "Isolated" || last === undefined) {
      out.push([start, stop]);
    } else if (
      behavior === "Contiguous" ? match === previous : match && !previous
    ) {
      if (behavior === "MergedWithNext") last[0] = start;
      else last[1] = stop;
    } else out.push([start, stop]);
    previous = match;
  }
  if (behavior === "MergedWithNext") out.reverse();
  return out;
}

/**
 * Isolated: each non-empty match and each stretch between matches. When
 * the matches cover the whole text (the usual case for a pre-tokenizer's
 * regex), `match` gives them without match objects.
 */
function isolate(text: string, pattern: RegExp): string[] {
  const matches = text.match(pattern);
  if (matches === null) return text.length === 0 ? [] : [text];
  let covered = 0;
  let empty = false;
  for (const match of matches) {
    covered += match.length;
    if (match.length === 0) empty = true;
  }
  if (covered === text.length) {
    return empty ? matches.filter((match) => match.length > 0) : matches;
  }
  const pieces: string[] = [];
  let end = 0;
  for (const match of text.matchAll(pattern)) {
    if (end < match.index) pieces.push(text.slice(end, match.index));
    if (match[0].length > 0) pieces.push(match[0]);
    end = match.index + match[0].length;
  }
  if (end < text.length) pieces.push(text.slice(end));
  return pieces;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
