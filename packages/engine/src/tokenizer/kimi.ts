/**
 * Kimi K2's tokenizer class, `TikTokenTokenizer` of the model folder's
 * `tokenization_kimi.py` (read from moonshotai/Kimi-K2-Instruct and
 * Kimi-Linear-48B-A3B-Instruct), which transformers loads as remote code
 * and vLLM calls through the slow-tokenizer path: the added tokens of
 * `tokenizer_config.json` split the text, and each stretch goes to
 * tiktoken over `tiktoken.model` with the class's `pat_str`, after its
 * cuts at 400,000 characters and at runs of 25,000 (Python `isspace`)
 * whitespace or non-whitespace characters. The special tokens are the
 * `num_reserved_special_tokens` ids after the vocabulary, named by
 * `added_tokens_decoder` or `<|reserved_token_{id}|>`. Its
 * `apply_chat_template` sorts the keys of the tool schemas
 * (`deep_sort_dict`, model/tool_sort.ts) before the template runs.
 *
 * @module
 */
import { EngineError } from "../common/errors.ts";
import { specialTokensOf } from "./config.ts";
import { parseTiktokenRanks } from "./tiktoken_bpe.ts";
import { tiktokenPattern } from "./tiktoken_pattern.ts";
import { tiktokenTokenizer } from "./tiktoken_tokenizer.ts";
import type { LocalTokenizer } from "./local_tokenizer.ts";

/** The alternatives of the class's `pat_str`, as its source writes them. */
const ALTERNATIVES = [
  String.raw`[\p{Han}]+`,
  String
    .raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
  String
    .raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
  String.raw`\p{N}{1,3}`,
  String.raw` ?[^\s\p{L}\p{N}]+[\r\n]*`,
  String.raw`\s*[\r\n]+`,
  String.raw`\s+(?!\S)`,
  String.raw`\s+`,
];

/** Kimi's split pattern, translated. */
export const KIMI_PATTERN: RegExp = tiktokenPattern(ALTERNATIVES.join("|"))!;

/** Python's `str.isspace` (Unicode 14, as /usr/bin/python3 3.11 lists it). */
const PY_SPACE =
  // deno-lint-ignore no-control-regex -- the separators \x1c-\x1f are spaces to Python
  /[\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;

/** What the module's source says, as {@linkcode kimiClass} reads it. */
export interface KimiClass {
  /** Whether `apply_chat_template` sorts the tool schemas. */
  readonly sortsTools: boolean;
  /** How many special ids follow the vocabulary. */
  readonly reserved: number;
}

/**
 * Reads `tokenization_kimi.py` for the parts that differ between releases,
 * refusing a source whose split pattern or chat-template steps are not
 * the ones mirrored.
 *
 * @param source The module's text.
 * @returns What the class does.
 * @throws {EngineError} Naming the part not mirrored and the `vllm` backend.
 */
export function kimiClass(source: string): KimiClass {
  if (source.includes("tools_ts_str")) {
    throw new EngineError(
      "Cannot count locally: tool_declaration_ts.py (Kimi's tools written as TypeScript) is remote code incontext does not mirror; use the vllm backend",
    );
  }
  const pattern = ALTERNATIVES.every((alt) => source.includes(`"""${alt}"""`));
  if (!pattern || !source.includes("num_reserved_special_tokens = 256")) {
    throw new EngineError(
      "Cannot count locally: tokenization_kimi.py splits text otherwise than the Kimi K2 release incontext mirrors; use the vllm backend",
    );
  }
  return {
    sortsTools: source.includes("deep_sort_dict(tools)"),
    reserved: source.includes("num_reserved_special_tokens + 2") ? 258 : 256,
  };
}

/** The files a Kimi tokenizer is built from. */
export interface KimiFiles {
  /** The text of `tiktoken.model`. */
  readonly tiktokenModel: string;
  /** The parsed `tokenizer_config.json`. */
  readonly config: Readonly<Record<string, unknown>>;
  /** What the class does ({@linkcode kimiClass}). */
  readonly kimi: KimiClass;
}

/**
 * Builds Kimi's tokenizer.
 *
 * @param files The vocabulary, the config and the class.
 * @returns The tokenizer.
 * @throws {EngineError} If `tiktoken.model` is malformed.
 */
export function kimiTokenizer(files: KimiFiles): LocalTokenizer {
  const ranks = parseTiktokenRanks(files.tiktokenModel);
  const decoder = files.config.added_tokens_decoder;
  const named = typeof decoder === "object" && decoder !== null
    ? new Map(Object.entries(decoder))
    : new Map();
  const specials = new Map<string, number>();
  for (let id = ranks.size; id < ranks.size + files.kimi.reserved; id++) {
    const content: unknown = named.get(String(id))?.content;
    specials.set(
      typeof content === "string" ? content : `<|reserved_token_${id}|>`,
      id,
    );
  }
  return tiktokenTokenizer({
    ranks,
    pattern: KIMI_PATTERN,
    specials,
    preSplit: kimiSplit,
    specialTokens: Object.freeze(specialTokensOf(files.config)),
  });
}

/**
 * The class's cuts before tiktoken: every 400,000 code points, then where
 * a run of whitespace or of other characters passes 25,000 code points.
 *
 * @param text A stretch between added tokens.
 * @returns The parts, in order.
 */
export function kimiSplit(text: string): string[] {
  if (text.length <= 25_000) return [text];
  const points = [...text];
  const parts: string[] = [];
  for (let chunk = 0; chunk < points.length; chunk += 400_000) {
    const slice = points.slice(chunk, chunk + 400_000);
    let start = 0;
    let run = 0;
    let space = slice.length > 0 && PY_SPACE.test(slice[0]!);
    for (let i = 0; i < slice.length; i++) {
      const now = PY_SPACE.test(slice[i]!);
      if (now !== space) {
        run = 1;
        space = now;
      } else if (++run > 25_000) {
        parts.push(slice.slice(start, i).join(""));
        start = i;
        run = 1;
      }
    }
    parts.push(slice.slice(start).join(""));
  }
  return parts;
}
