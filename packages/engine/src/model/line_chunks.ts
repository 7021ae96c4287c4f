/**
 * Line chunks: a piece of text between added tokens cut further, after a
 * line feed that a non-whitespace character follows, for the tokenizers
 * whose pre-tokenizer is known to split there whatever comes before.
 *
 * Why that cut is exact, for the GPT-4-style patterns listed below (Qwen2/3,
 * Llama 3, DeepSeek V3): no alternative of the pattern matches across such a
 * line feed. Those that can hold a line feed end in `[\r\n]*` or `[\r\n]+`
 * (` ?[^\s\p{L}\p{N}]+[\r\n]*`, `\s*[\r\n]+`), so they stop right after it
 * when a non-whitespace character follows; `\s*[\r\n]+` comes before the
 * only alternative with a lookahead (`\s+(?!\S)`), so a whitespace run that
 * ends in a line feed always ends there, with or without the text after it;
 * no alternative looks behind. The digit and CJK splits DeepSeek V3 runs
 * first never hold a line feed either. NFC (Qwen) composes nothing with a
 * line feed, so normalising the parts is normalising the whole. The
 * byte-level step maps each pre-token on its own. So the pre-tokens of the
 * whole are the pre-tokens of the parts, and BPE works per pre-token.
 * tests/engine/model/line_chunks_test.ts checks the sum on adversarial text per family.
 *
 * @module
 */

/** The pre-tokenizer `Split` patterns the argument above covers, as tokenizer.json spells them. */
const KNOWN_PATTERNS: ReadonlyArray<readonly string[]> = [
  // Qwen2, Qwen2.5, Qwen3
  [
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  ],
  // Llama 3, 3.1, 3.2, 3.3 (and cl100k_base)
  [
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  ],
  // DeepSeek V3, R1
  [
    "\\p{N}{1,3}",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
  ],
];

/**
 * Whether a tokenizer splits at every line feed followed by a
 * non-whitespace character whatever precedes it: no normaliser or NFC, a
 * BPE model, and a pre-tokenizer that is exactly one of the known `Split`
 * sequences (isolated, not inverted) and then a byte-level step without a
 * prefix space or a regex of its own.
 *
 * @param tokenizerJson The parsed `tokenizer.json`.
 * @returns Whether line chunks count exactly.
 */
export function isLineChunkSafe(tokenizerJson: unknown): boolean {
  if (!isObject(tokenizerJson)) return false;
  const { normalizer, pre_tokenizer: pre, model } = tokenizerJson;
  if (!isObject(model) || model.type !== "BPE") return false;
  if (!identityOrNfc(normalizer)) return false;
  if (!isObject(pre) || pre.type !== "Sequence") return false;
  const steps = pre.pretokenizers;
  if (!Array.isArray(steps) || steps.length < 2) return false;
  const last = steps.at(-1);
  if (
    !isObject(last) || last.type !== "ByteLevel" ||
    last.add_prefix_space !== false || last.use_regex !== false
  ) return false;
  const patterns: string[] = [];
  for (const step of steps.slice(0, -1)) {
    if (
      !isObject(step) || step.type !== "Split" ||
      step.behavior !== "Isolated" || step.invert !== false ||
      !isObject(step.pattern) || typeof step.pattern.Regex !== "string"
    ) return false;
    patterns.push(step.pattern.Regex);
  }
  return KNOWN_PATTERNS.some((known) =>
    known.length === patterns.length &&
    known.every((pattern, i) => pattern === patterns[i])
  );
}

function identityOrNfc(normalizer: unknown): boolean {
  if (normalizer === null || normalizer === undefined) return true;
  if (!isObject(normalizer)) return false;
  if (normalizer.type === "NFC") return true;
  return normalizer.type === "Sequence" &&
    Array.isArray(normalizer.normalizers) &&
    normalizer.normalizers.every(identityOrNfc);
}

/** A line feed and a character that is whitespace neither to JavaScript nor to Unicode. */
const CUT = /\n(?=[^\s\p{White_Space}])/gu;

/**
 * Where to cut a piece: after the first line feed that a non-whitespace
 * character follows (a template changes a message's head, e.g. Qwen3 drops
 * an earlier turn's `<think>` block, and the rest must still match), then
 * after each such line feed whose line is a multiple of 4 code units long.
 * The choice depends only on the line's own text, so equal text is cut
 * alike wherever it sits, and about one line in four makes a chunk: cutting
 * at every line would fill the count cache with one entry per line.
 *
 * @example Cutting after a message's head
 * ```ts
 * import { lineChunkEnds } from "./line_chunks.ts";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * // "assistant\n" always; "  indented\n" is not cut before (a space follows
 * // "Hello.\n"); "Hello.\n  indented\n" is 18 long; "abc\n" is 4 long.
 * deepStrictEqual(lineChunkEnds("assistant\nHello.\n  indented\nabc\nend"), [10, 32]);
 * ```
 *
 * @param piece The text between two added tokens.
 * @returns The end of each chunk but the last (the last ends at `piece.length`).
 */
export function lineChunkEnds(piece: string): number[] {
  const ends: number[] = [];
  let lineStart = 0;
  CUT.lastIndex = 0;
  for (let match; (match = CUT.exec(piece)) !== null;) {
    const end = match.index + 1;
    if (ends.length === 0 || (end - lineStart) % 4 === 0) ends.push(end);
    lineStart = end;
  }
  return ends;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
