/**
 * @huggingface/tokenizers' ByteLevel pre-tokenizer (0.2.x), alone or last
 * after regex Splits, read from the library's built objects and run without
 * its per-call arrays: the pieces it cuts, before their bytes are mapped to
 * the byte alphabet (the BPE words map bytes to symbols directly).
 *
 * @module
 */

/** A ByteLevel pre-tokenizer, fused: the Splits before it, then its own options. */
export interface FusedByteLevel {
  /** The Splits' patterns, in order (global). */
  readonly splits: readonly RegExp[];
  /** Whether a piece not starting with a space gets one. */
  readonly addPrefixSpace: boolean;
  /** ByteLevel's own pattern when it splits (`use_regex`), else `null`. */
  readonly pattern: RegExp | null;
}

/**
 * A ByteLevel pre-tokenizer the fast path reproduces: ByteLevel itself, or a
 * Sequence of regex Splits (the library's Isolated split: matches and the
 * text between them) then ByteLevel. Read from the built objects, after
 * whitespace.ts rewrote their patterns.
 *
 * @example Read a ByteLevel pre-tokenizer
 * ```ts
 * import { Tokenizer } from "@huggingface/tokenizers";
 * import { fusedByteLevel, fusedPieces } from "./fused_byte_level.ts";
 * const config = { type: "ByteLevel", add_prefix_space: false, use_regex: true };
 * const library = new Tokenizer({
 *   model: { type: "BPE", vocab: {}, merges: [] }, normalizer: null,
 *   pre_tokenizer: config, post_processor: null, decoder: null, added_tokens: [],
 * }, {});
 * const built = (library as unknown as { pre_tokenizer: unknown }).pre_tokenizer;
 * const fused = fusedByteLevel(config, built)!;
 * console.assert(fusedPieces("Hi there", fused.byteLevel).join("|") === "Hi| there");
 * ```
 *
 * @param config The `pre_tokenizer` of tokenizer.json.
 * @param built The library's pre-tokenizer built from it.
 * @returns The fused pre-tokenizer and the byte alphabet, or `undefined` for another shape.
 */
export function fusedByteLevel(
  config: unknown,
  built: unknown,
): { byteLevel: FusedByteLevel; alphabet: string[] } | undefined {
  if (!isRecord(config) || !isNode(built)) return undefined;
  const node = built as Record<string, unknown>;
  let members: unknown[] = [config];
  let nodes: unknown[] = [node];
  if (config.type === "Sequence") {
    if (
      !Array.isArray(config.pretokenizers) || !Array.isArray(node.tokenizers) ||
      config.pretokenizers.length !== node.tokenizers.length
    ) return undefined;
    members = config.pretokenizers;
    nodes = node.tokenizers;
  }
  const splits: RegExp[] = [];
  for (let i = 0; i < members.length - 1; i++) {
    const member = members[i];
    const split = nodes[i] as Record<string, unknown>;
    const behavior = isRecord(split?.config) ? split.config.behavior : null;
    if (
      !isRecord(member) || member.type !== "Split" || !isNode(split) ||
      !(split.pattern instanceof RegExp) || !split.pattern.global ||
      !isRecord(split.config) || split.config.invert ||
      behavior !== undefined && typeof behavior !== "string" ||
      typeof behavior === "string" && behavior.toLowerCase() === "removed"
    ) return undefined;
    splits.push(split.pattern);
  }
  const last = members.at(-1);
  const byteLevel = nodes.at(-1) as Record<string, unknown>;
  if (
    !isRecord(last) || last.type !== "ByteLevel" || !isNode(byteLevel) ||
    typeof byteLevel.add_prefix_space !== "boolean" ||
    typeof byteLevel.use_regex !== "boolean" ||
    !(byteLevel.pattern instanceof RegExp) || !byteLevel.pattern.global ||
    !isRecord(byteLevel.byte_encoder)
  ) return undefined;
  const alphabet: string[] = [];
  for (let byte = 0; byte < 256; byte++) {
    const char = byteLevel.byte_encoder[byte];
    if (typeof char !== "string") return undefined;
    alphabet.push(char);
  }
  return {
    byteLevel: {
      splits,
      addPrefixSpace: byteLevel.add_prefix_space,
      pattern: byteLevel.use_regex ? byteLevel.pattern : null,
    },
    alphabet,
  };
}

/**
 * The pieces, before the byte mapping, that the fused pre-tokenizer cuts a text into.
 *
 * @param text The text.
 * @param fused The pre-tokenizer.
 * @returns The pieces.
 */
export function fusedPieces(text: string, fused: FusedByteLevel): string[] {
  let pieces = [text];
  for (const split of fused.splits) {
    pieces = pieces.length === 1
      ? isolate(pieces[0]!, split)
      : pieces.flatMap((piece) => isolate(piece, split));
  }
  if (!fused.addPrefixSpace && fused.pattern === null) return pieces;
  const out: string[] = [];
  for (let piece of pieces) {
    if (fused.addPrefixSpace && !piece.startsWith(" ")) piece = " " + piece;
    if (fused.pattern === null) out.push(piece);
    else for (const match of piece.match(fused.pattern) ?? []) out.push(match);
  }
  return out;
}

/**
 * The library's Isolated split: each non-empty match and each stretch
 * between matches. When the matches cover the whole text (the usual case
 * for a pre-tokenizer's regex), `match` gives them without match objects.
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

function isNode(value: unknown): boolean {
  return typeof value === "function" ||
    typeof value === "object" && value !== null;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
