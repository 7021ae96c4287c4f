/**
 * Grok 2's tokenizer as vLLM's tokenizer mode `grok2` loads it
 * (`vllm/tokenizers/grok2.py`): tiktoken over `tokenizer.tok.json`, whose
 * `regular_tokens` and `special_tokens` are `{bytes, token}` entries, split
 * by the file's `pat_str` or, for `word_split` `V1`, vLLM's pattern. Its
 * `encode` recognises only the allowed specials (the file's
 * `default_allowed_special`, `<|pad|>`, `<|separator|>`, `<|eos|>`,
 * `<|control1|>` to `<|control704|>`, `<|reserved_3|>` to
 * `<|reserved_127|>`), the others read as text, and adds no special token.
 *
 * @module
 */
import { EngineError } from "../common/errors.ts";
import { tiktokenPattern } from "./tiktoken_pattern.ts";
import { tiktokenTokenizer } from "./tiktoken_tokenizer.ts";
import type { LocalTokenizer } from "./local_tokenizer.ts";

/** vLLM's `PAT_STR_B`: tiktoken's default with each digit apart. */
const PAT_STR_B = String
  .raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;

/** The specials vLLM's patched `encode` always allows. */
const ALLOWED = [
  "<|pad|>",
  "<|separator|>",
  "<|eos|>",
  ...Array.from({ length: 704 }, (_, i) => `<|control${i + 1}|>`),
  ...Array.from({ length: 125 }, (_, i) => `<|reserved_${i + 3}|>`),
];

const UTF8 = new TextDecoder();

/**
 * Why no chat counts in this mode: vLLM's `Grok2Tokenizer.apply_chat_template`
 * calls `transformers.utils.chat_template_utils.apply_chat_template`, which
 * no transformers release vLLM accepts has (4.57.6 and 5.18.0 read), so
 * vLLM answers every chat request (and chat `/tokenize`) with an error.
 */
export const GROK2_CHAT: string =
  "Cannot count a chat request in vLLM's tokenizer mode grok2: vLLM's Grok2Tokenizer renders chats with transformers' chat_template_utils.apply_chat_template, which transformers does not have, so vLLM fails every chat request";

/**
 * Builds Grok 2's tokenizer from `tokenizer.tok.json`.
 *
 * @example Two bytes and a separator
 * ```ts
 * import { grok2Tokenizer } from "./grok2.ts";
 * const tokenizer = grok2Tokenizer(JSON.stringify({
 *   word_split: "V1",
 *   regular_tokens: [{ bytes: [104], token: 0 }, { bytes: [105], token: 1 }],
 *   special_tokens: [{ bytes: [...new TextEncoder().encode("<|separator|>")], token: 2 }],
 * }));
 * console.assert(tokenizer.encode("hi<|separator|>").join() === "0,1,2");
 * ```
 *
 * @param text The file's text.
 * @returns The tokenizer.
 * @throws {EngineError} In one line, for a file vLLM does not load or a
 * `pat_str` the engine does not translate.
 */
export function grok2Tokenizer(text: string): LocalTokenizer {
  let file: unknown;
  try {
    file = JSON.parse(text);
  } catch {
    throw unreadable("it is not JSON");
  }
  if (!isRecord(file)) throw unreadable("it is not a JSON object");
  if (file.word_split !== "V1") {
    throw unreadable("its word_split is not V1");
  }
  const ranks = new Map<string, number>();
  for (const [bytes, token] of entries(optional(file, "regular_tokens"))) {
    ranks.set(bytes, token);
  }
  if (ranks.size === 0) throw unreadable("it has no regular tokens");
  if (new Set(ranks.values()).size !== ranks.size) {
    throw unreadable("two regular tokens share a rank");
  }
  const specials = new Map<string, number>();
  for (const [bytes, token] of entries(optional(file, "special_tokens"))) {
    specials.set(utf8(bytes), token);
  }
  checkVocabSize(file.vocab_size, ranks, specials);
  const pat = "pat_str" in file ? file.pat_str : PAT_STR_B;
  if (typeof pat !== "string") throw unreadable("its pat_str is not a string");
  const pattern = tiktokenPattern(pat);
  if (pattern === undefined) {
    throw new EngineError(
      "Cannot count locally: tokenizer.tok.json's pat_str uses a construct incontext does not translate; use the vllm backend",
    );
  }
  const allowed = new Set(ALLOWED);
  const listed = optional(file, "default_allowed_special");
  for (const [bytes] of entries(listed, false)) {
    allowed.add(utf8(bytes));
  }
  return tiktokenTokenizer({
    ranks,
    pattern,
    specials,
    allowed,
    // vLLM's convert_ids_to_tokens: the bytes read as UTF-8, errors replaced.
    tokenString: utf8,
    specialTokens: {},
  });
}

/**
 * `{bytes, token}` entries (or, with `tokens` false, bare byte lists) as
 * Latin-1 strings and ids.
 */
function* entries(
  list: unknown,
  tokens = true,
): Generator<[string, number]> {
  if (!Array.isArray(list)) throw unreadable("a token list is not an array");
  for (const entry of list) {
    const bytes = tokens ? (entry as { bytes?: unknown })?.bytes : entry;
    const token = tokens ? (entry as { token?: unknown })?.token : 0;
    if (
      !Array.isArray(bytes) ||
      !bytes.every((b) => Number.isInteger(b) && b >= 0 && b <= 255) ||
      !Number.isInteger(token) || (token as number) < 0 ||
      (token as number) > 0xffff_ffff
    ) {
      throw unreadable("a token is not a list of bytes with an id");
    }
    yield [String.fromCharCode(...bytes), token as number];
  }
}

/** tiktoken's `explicit_n_vocab` checks: the count of tokens, and the largest id. */
function checkVocabSize(
  size: unknown,
  ranks: ReadonlyMap<string, number>,
  specials: ReadonlyMap<string, number>,
): void {
  // Python's truthiness, as tiktoken tests `if explicit_n_vocab`.
  if (!size) return;
  let largest = 0;
  for (const id of [...ranks.values(), ...specials.values()]) {
    if (id > largest) largest = id;
  }
  if (size !== ranks.size + specials.size || largest !== size - 1) {
    throw unreadable("its vocab_size does not match its tokens");
  }
}

/** A field Python's `dict.get(name, [])` reads: `null` is a value, not a default. */
function optional(file: Record<string, unknown>, name: string): unknown {
  return name in file ? file[name] : [];
}

function utf8(bytes: string): string {
  return UTF8.decode(Uint8Array.from(bytes, (char) => char.charCodeAt(0)));
}

function unreadable(why: string): EngineError {
  return new EngineError(
    `Cannot count locally: tokenizer.tok.json is not a Grok 2 vocabulary vLLM loads (${why})`,
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
