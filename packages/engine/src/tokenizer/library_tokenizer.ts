/**
 * @huggingface/tokenizers through its public API alone: its `Tokenizer`
 * encodes what the engine's pipeline does not reproduce, and decodes.
 * Where its pre-tokenizers or normalizers split on JavaScript's `\s` and
 * `\w` (ByteLevel's own regex, Whitespace, WhitespaceSplit,
 * BertPreTokenizer, Strip, the Bert and Precompiled normalizers, an added
 * token's `lstrip`/`rstrip`), the Rust `tokenizers` crate splits on
 * Unicode's classes: JavaScript's `\s` has U+FEFF and lacks U+0085, and its
 * `\w` is ASCII. A text on which the two would differ is refused with an
 * EngineError, so that its count falls back rather than comes out wrong.
 *
 * @module
 */
import { Tokenizer } from "@huggingface/tokenizers";
import { EngineError } from "../common/errors.ts";

/** Encodes with the library. */
export interface LibraryEncoder {
  /**
   * The ids of a text.
   *
   * @param text The text.
   * @param addSpecialTokens Whether the post-processor's special tokens are added.
   * @returns The ids.
   * @throws {EngineError} For a text the library would split otherwise than the crate.
   */
  encode(text: string, addSpecialTokens: boolean): number[];
  /** The library's tokenizer, for the rest of its public API. */
  readonly tokenizer: Tokenizer;
}

/** The whitespace on which JavaScript's `\s` and the crate's disagree. */
const DISPUTED_SPACE = /[\u0085\ufeff]/;
/** What JavaScript's `\w` (ASCII) and the crate's (Unicode) may disagree on. */
const NON_ASCII = /[^\0-\x7f]/;

/**
 * The library's tokenizer for a parsed tokenizer.json, refusing the texts
 * its whitespace splits otherwise than the crate's.
 *
 * @example Encode a WordPiece tokenizer, refusing U+0085
 * ```ts
 * import { libraryEncoder } from "./library_tokenizer.ts";
 * import { deepStrictEqual, throws } from "node:assert/strict";
 * const encoder = libraryEncoder({
 *   model: {
 *     type: "WordPiece", vocab: { "[UNK]": 0, hi: 1, "##s": 2 },
 *     unk_token: "[UNK]", continuing_subword_prefix: "##",
 *     max_input_chars_per_word: 100,
 *   },
 *   pre_tokenizer: { type: "WhitespaceSplit" },
 *   normalizer: null, post_processor: null, decoder: null, added_tokens: [],
 * }, {});
 * deepStrictEqual(encoder.encode("hi his", false), [1, 1, 2]);
 * throws(() => encoder.encode("hi\u0085his", false));
 * ```
 *
 * @param json The parsed tokenizer.json (the library keeps it).
 * @param config The parsed tokenizer_config.json.
 * @returns The encoder.
 */
export function libraryEncoder(
  json: Record<string, unknown>,
  config: Record<string, unknown>,
): LibraryEncoder {
  const tokenizer = new Tokenizer(json, config);
  const disputed = disputedText(json);
  return {
    tokenizer,
    encode(text, addSpecialTokens) {
      if (disputed?.test(text)) {
        throw new EngineError(
          "Cannot count this text exactly: @huggingface/tokenizers splits it on JavaScript's whitespace or word characters, which differ from the Rust tokenizers crate's for characters it holds (U+0085, U+FEFF, or non-ASCII word characters), in a tokenizer.json shape the engine does not run itself",
        );
      }
      return tokenizer.encode(text, { add_special_tokens: addSpecialTokens })
        .ids;
    },
  };
}

/**
 * The texts the library would split otherwise than the crate for this
 * tokenizer.json: any non-ASCII text behind a Whitespace pre-tokenizer,
 * else a text with U+0085 or U+FEFF behind any step that reads `\s`, or
 * `undefined` when no step does.
 */
function disputedText(json: Record<string, unknown>): RegExp | undefined {
  const types = new Set<string>();
  collectTypes(json.pre_tokenizer, types);
  collectTypes(json.normalizer, types);
  if (types.has("Whitespace")) return NON_ASCII;
  const stripping = Array.isArray(json.added_tokens) &&
    json.added_tokens.some((token) =>
      isRecord(token) && (token.lstrip === true || token.rstrip === true)
    );
  const spaced = stripping || types.has("WhitespaceSplit") ||
    types.has("BertPreTokenizer") || types.has("Strip") ||
    types.has("BertNormalizer") || types.has("Precompiled") ||
    types.has("ByteLevel:regex");
  return spaced ? DISPUTED_SPACE : undefined;
}

/** The step types of a normalizer or pre-tokenizer, ByteLevel with its regex as `ByteLevel:regex`. */
function collectTypes(step: unknown, types: Set<string>, depth = 0): void {
  if (!isRecord(step) || depth > 8) return;
  if (typeof step.type === "string") {
    types.add(
      step.type === "ByteLevel" && step.use_regex !== false
        ? "ByteLevel:regex"
        : step.type,
    );
  }
  for (const list of [step.pretokenizers, step.normalizers]) {
    if (!Array.isArray(list)) continue;
    for (const inner of list) collectTypes(inner, types, depth + 1);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
