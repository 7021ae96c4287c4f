/**
 * Incremental counting's split: a rendered prompt cut at the tokenizer's
 * added tokens (`_local_prefix.ts` counts and caches the pieces). HF
 * tokenizers (the Rust crate and `@huggingface/tokenizers` alike) split added
 * tokens out before normalisation and pre-tokenisation, and then treat every
 * piece on its own, so for the tokenizers {@linkcode isSegmentationSafe}
 * accepts, the sum of the pieces' counts is the count of the whole text.
 *
 * @module
 */

/** One piece of a text split at added tokens. */
export interface Segment {
  /** The piece's text. */
  readonly text: string;
  /** Whether the piece is an added token (one token). */
  readonly added: boolean;
}

const splitters = new WeakMap<readonly string[], RegExp | null>();

/**
 * Leftmost-longest matching, as the tokenizer's trie of added tokens does:
 * a global RegExp kept per array (callers set `lastIndex` before each
 * scan), or `null` when there are no added tokens.
 */
export function splitterFor(addedTokens: readonly string[]): RegExp | null {
  let splitter = splitters.get(addedTokens);
  if (splitter === undefined) {
    const contents = [...new Set(addedTokens)].filter((token) => token !== "")
      .sort((a, b) => b.length - a.length);
    // No `u` flag: the tokenizer matches UTF-16 code units too.
    splitter = contents.length === 0 ? null : new RegExp(
      contents.map((token) => token.replace(/[\\^$.*+?()[\]{}|/-]/g, "\\$&"))
        .join("|"),
      "g",
    );
    splitters.set(addedTokens, splitter);
  }
  return splitter;
}

/**
 * Splits a text at added tokens as the tokenizer does before normalising:
 * at each position, the longest added token that starts there, scanning left
 * to right. Empty pieces are left out.
 *
 * @example Splitting a chat turn
 * ```ts
 * import { splitAtAddedTokens } from "./segments.ts";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const tokens = Object.freeze(["<|im_start|>", "<|im_end|>"]);
 * deepStrictEqual(splitAtAddedTokens("<|im_start|>user\nhi<|im_end|>", tokens), [
 *   { text: "<|im_start|>", added: true },
 *   { text: "user\nhi", added: false },
 *   { text: "<|im_end|>", added: true },
 * ]);
 * ```
 *
 * @param text The text.
 * @param addedTokens The added tokens' contents; keep passing the same array,
 * as the matcher built from it is kept for that array.
 * @returns The pieces, in order.
 */
export function splitAtAddedTokens(
  text: string,
  addedTokens: readonly string[],
): Segment[] {
  const splitter = splitterFor(addedTokens);
  if (splitter === null) return text === "" ? [] : [{ text, added: false }];
  const segments: Segment[] = [];
  let start = 0;
  splitter.lastIndex = 0;
  for (let match; (match = splitter.exec(text)) !== null;) {
    if (match.index > start) {
      segments.push({ text: text.slice(start, match.index), added: false });
    }
    segments.push({ text: match[0], added: true });
    start = splitter.lastIndex;
  }
  if (start < text.length) {
    segments.push({ text: text.slice(start), added: false });
  }
  return segments;
}

const SAFE_NORMALIZERS = new Set([
  "NFC",
  "NFD",
  "NFKC",
  "NFKD",
  "Lowercase",
  "Replace",
  "StripAccents",
  "Strip",
  "Prepend",
  "BertNormalizer",
  "Precompiled",
]);
const SAFE_PRE_TOKENIZERS = new Set([
  "ByteLevel",
  "Split",
  "Whitespace",
  "WhitespaceSplit",
  "Punctuation",
  "Digits",
  "BertPreTokenizer",
  "Replace",
]);
const SAFE_POST_PROCESSORS = new Set([
  "ByteLevel",
  "TemplateProcessing",
  "BertProcessing",
  "RobertaProcessing",
]);

/**
 * Whether counting the pieces between added tokens separately gives the
 * count of the whole text, for a tokenizer: true only when every step is
 * known to work piece by piece. It is false when an added token strips the
 * whitespace next to it (`lstrip`, `rstrip`), matches whole words only
 * (`single_word`), or is matched after normalisation (`normalized` with a
 * normaliser); when a Metaspace pre-tokenizer prepends its space to the
 * first piece only (`prepend_scheme: "first"`, or unstated); and when any
 * step is of a kind not listed here.
 *
 * @example Byte-level BPE is safe; Metaspace "first" is not
 * ```ts
 * import { isSegmentationSafe } from "./segments.ts";
 * import { strictEqual } from "node:assert/strict";
 *
 * const base = { model: { type: "BPE" }, normalizer: null, added_tokens: [] };
 * const byteLevel = { type: "ByteLevel", add_prefix_space: false };
 * strictEqual(isSegmentationSafe({ ...base, pre_tokenizer: byteLevel }), true);
 * const first = { type: "Metaspace", prepend_scheme: "first" };
 * strictEqual(isSegmentationSafe({ ...base, pre_tokenizer: first }), false);
 * ```
 *
 * @param tokenizerJson The parsed `tokenizer.json`.
 * @returns Whether incremental counting is exact for this tokenizer.
 */
export function isSegmentationSafe(tokenizerJson: unknown): boolean {
  if (!isObject(tokenizerJson)) return false;
  const { normalizer, pre_tokenizer, post_processor, added_tokens } =
    tokenizerJson;
  if (!Array.isArray(added_tokens)) return false;
  return safeAddedTokens(added_tokens, normalizer) &&
    safeStep(normalizer, SAFE_NORMALIZERS, "normalizers") &&
    safeStep(pre_tokenizer, SAFE_PRE_TOKENIZERS, "pretokenizers") &&
    safeStep(post_processor, SAFE_POST_PROCESSORS, "processors");
}

/**
 * The tokenizers match unnormalised added tokens first, then normalised ones
 * in the normalised text between them. One leftmost-longest split over all
 * of them is the same only when no normaliser changes the text, and no
 * token of one kind can overlap a token of the other.
 */
function safeAddedTokens(tokens: unknown[], normalizer: unknown): boolean {
  const raw: string[] = [];
  const normalised: string[] = [];
  for (const token of tokens) {
    if (!isObject(token) || typeof token.content !== "string") return false;
    if (token.lstrip === true || token.rstrip === true) return false;
    if (token.single_word === true) return false;
    // The tokenizers' default: special tokens are matched unnormalised.
    const normalized = token.normalized ?? token.special !== true;
    (normalized === true ? normalised : raw).push(token.content);
  }
  if (
    normalised.length === 0 || normalizer === null || normalizer === undefined
  ) return true;
  return isIdentity(normalizer) &&
    normalised.every((a) => raw.every((b) => !overlap(a, b) && !overlap(b, a)));
}

function isIdentity(normalizer: unknown): boolean {
  return normalizer === null || isObject(normalizer) &&
      normalizer.type === "Sequence" && Array.isArray(normalizer.normalizers) &&
      normalizer.normalizers.every(isIdentity);
}

/** Whether `a` contains `b`, or a suffix of `a` is a prefix of `b`. */
function overlap(a: string, b: string): boolean {
  if (a.includes(b)) return true;
  for (let i = 1; i < a.length; i++) {
    if (b.startsWith(a.slice(i))) return true;
  }
  return false;
}

function safeStep(step: unknown, safe: Set<string>, list: string): boolean {
  if (step === null || step === undefined) return true;
  if (!isObject(step)) return false;
  if (step.type === "Sequence") {
    const steps = step[list];
    return Array.isArray(steps) &&
      steps.every((inner) => safeStep(inner, safe, list));
  }
  if (step.type === "Metaspace" && list === "pretokenizers") {
    return step.prepend_scheme === "always" || step.prepend_scheme === "never";
  }
  return typeof step.type === "string" && safe.has(step.type);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
