/**
 * `encode` of @huggingface/tokenizers' `Tokenizer` (0.2.x) for a BPE model,
 * without its per-call glue: the same steps (added tokens split out, their
 * `lstrip`/`rstrip`, the normalizer, the pre-tokenizer, the model, the
 * post-processor's special tokens) over the library's own objects, the
 * model's words merged by {@linkcode BpeWords}. A ByteLevel pre-tokenizer
 * (alone, or last after regex Splits) is fused into it: pieces are cut by
 * the same regexes and their bytes become symbols directly. Built only for
 * the shapes it reproduces; any other tokenizer keeps the library's path.
 *
 * @module
 */
import type { BpeMerges } from "./bpe_merges.ts";
import { BpeWords, type LibraryBpeModel } from "./bpe_words.ts";
import { fusedByteLevel, fusedPieces } from "./fused_byte_level.ts";

/** Tokenizes text as the library's `encode(text).ids` does. */
export interface FastEncoder {
  /**
   * The ids of a text.
   *
   * @param text The text.
   * @param addSpecialTokens Whether the post-processor's special tokens are added.
   * @returns The ids.
   */
  encode(text: string, addSpecialTokens: boolean): number[];
}

/** An added token as the library keeps it. */
interface AddedToken {
  readonly id: number;
  readonly lstrip: boolean;
  readonly rstrip: boolean;
}

/** What is read of @huggingface/tokenizers' `Tokenizer` (0.2.x). */
interface LibraryTokenizer {
  normalizer: ((text: string) => string) | null;
  pre_tokenizer: ((text: string, options?: unknown) => string[]) | null;
  /** Called, it tokenizes words and applies `fuse_unk`. */
  model: LibraryBpeModel & ((words: string[]) => string[]) & {
    end_of_word_suffix?: unknown;
    continuing_subword_suffix?: unknown;
  };
  post_processor:
    | ((tokens: unknown[], pair: null, add: boolean) => { tokens: unknown })
    | null;
  added_tokens_map: Map<string, AddedToken>;
  splitter_unnormalized: DictionarySplitter;
  splitter_normalized: DictionarySplitter;
  remove_space?: unknown;
  do_lowercase_and_remove_accent?: unknown;
}

/** The library's splitter of text around added tokens: a trie of their code units. */
interface DictionarySplitter {
  split(text: string): string[];
  readonly trie?: unknown;
}

/**
 * Builds the fast path of a library tokenizer, or `undefined` for a shape
 * it does not reproduce exactly.
 *
 * @example Encode as the library does
 * ```ts
 * import { Tokenizer } from "@huggingface/tokenizers";
 * import { BpeMerges } from "./bpe_merges.ts";
 * import { createFastEncoder } from "./fast_encode.ts";
 * const json = {
 *   model: { type: "BPE", vocab: { a: 0, b: 1, ab: 2 }, merges: [["a", "b"]] },
 *   normalizer: null, pre_tokenizer: null, post_processor: null,
 *   decoder: null, added_tokens: [],
 * };
 * const library = new Tokenizer(json, {});
 * const model = (library as unknown as { model: ConstructorParameters<typeof BpeMerges>[0] }).model;
 * const fast = createFastEncoder(library, json, new BpeMerges(model))!;
 * console.assert(fast.encode("aba", false).join() === "2,0");
 * ```
 *
 * @param library The library's `Tokenizer`, already patched.
 * @param json The parsed `tokenizer.json` it was built from.
 * @param merges The model's merges over symbols.
 * @returns The encoder, or `undefined`.
 */
export function createFastEncoder(
  library: unknown,
  json: Record<string, unknown>,
  merges: BpeMerges,
): FastEncoder | undefined {
  const tokenizer = library as LibraryTokenizer;
  if (!reproducible(tokenizer, json)) return undefined;
  const added = tokenizer.added_tokens_map;
  const model = tokenizer.model;
  // As the library's encode() maps a token string to its id.
  const idOf = (token: string): number =>
    added.get(token)?.id ?? model.tokens_to_ids.get(token) ??
      model.unk_token_id!;
  const affixes = [false, true].map((add) =>
    specialTokensAround(tokenizer.post_processor, add, idOf)
  );
  if (affixes[0] === undefined || affixes[1] === undefined) return undefined;
  let longest = 0;
  for (const content of added.keys()) {
    longest = Math.max(longest, content.length);
  }
  const pipeline: Pipeline = {
    normalizer: tokenizer.normalizer,
    added: { byContent: added, longest },
    unnormalized: quickSplitter(tokenizer.splitter_unnormalized),
    normalized: quickSplitter(tokenizer.splitter_normalized),
    section: sectionEncoder(tokenizer, json, merges, idOf),
  };
  return {
    encode(text: string, addSpecialTokens: boolean): number[] {
      const [before, after] = affixes[addSpecialTokens ? 1 : 0]!;
      const out = [...before];
      encodeText(pipeline, text, out);
      for (const id of after) out.push(id);
      return out;
    },
  };
}

/** Whether the fast path reproduces the library's for this tokenizer. */
function reproducible(
  tokenizer: LibraryTokenizer,
  json: Record<string, unknown>,
): boolean {
  const model = tokenizer.model;
  return isRecord(json.model) && json.model.type === "BPE" &&
    !model.end_of_word_suffix && !model.continuing_subword_suffix &&
    typeof model.encode === "function" &&
    typeof model.ignore_merges === "boolean" &&
    typeof model.fuse_unk === "boolean" &&
    tokenizer.remove_space !== true &&
    tokenizer.do_lowercase_and_remove_accent === false &&
    tokenizer.added_tokens_map instanceof Map &&
    typeof tokenizer.splitter_unnormalized?.split === "function" &&
    typeof tokenizer.splitter_normalized?.split === "function" &&
    knownPostProcessor(json.post_processor, 0);
}

/** Appends the ids of a stretch of text between added tokens. */
type Section = (text: string, index: number, out: number[]) => void;

/** What `encode_text` runs, read once. */
interface Pipeline {
  readonly normalizer: ((text: string) => string) | null;
  readonly added: AddedTokens;
  readonly unnormalized: Split;
  readonly normalized: Split;
  readonly section: Section;
}

/**
 * The ids of a stretch between added tokens, as the library's pre-tokenizer
 * and model give them: pieces cut by the fused ByteLevel or by the
 * library's pre-tokenizer, each merged by {@linkcode BpeWords}.
 */
function sectionEncoder(
  tokenizer: LibraryTokenizer,
  json: Record<string, unknown>,
  merges: BpeMerges,
  idOf: (token: string) => number,
): Section {
  const fused = fusedByteLevel(json.pre_tokenizer, tokenizer.pre_tokenizer);
  const words = new BpeWords(
    {
      model: tokenizer.model,
      merges,
      idOf,
      // encode() reads a token string's id from the added tokens first.
      reassigned: tokenizer.added_tokens_map.keys(),
    },
    fused === undefined ? {} : { byteAlphabet: fused.alphabet },
  );
  const preTokenize = (text: string, index: number): string[] => {
    const pre = tokenizer.pre_tokenizer;
    return pre === null ? [text] : pre(text, { section_index: index });
  };
  return (text, index, out) => {
    const start = out.length;
    const pieces = fused === undefined
      ? preTokenize(text, index)
      : fusedPieces(text, fused.byteLevel);
    let unknown = false;
    for (const piece of pieces) unknown = words.push(piece, out) || unknown;
    // fuse_unk joins unknown tokens across words: the library redoes it.
    if (unknown) {
      out.length = start;
      const tokens = tokenizer.model(preTokenize(text, index));
      for (const token of tokens) out.push(idOf(token));
    }
  };
}

/** The library's `encode_text`, each stretch between added tokens given to `section`. */
function encodeText(pipeline: Pipeline, text: string, out: number[]): void {
  const { added, normalizer, section } = pipeline;
  const sections = stripAround(pipeline.unnormalized(text), added);
  for (let i = 0; i < sections.length; i++) {
    let part = sections[i]!;
    if (part.length === 0) continue;
    const token = addedToken(added, part);
    if (token !== undefined) {
      out.push(token.id);
      continue;
    }
    if (normalizer !== null) part = normalizer(part);
    if (part.length === 0) continue;
    const inner = stripAround(pipeline.normalized(part), added);
    for (const piece of inner) {
      if (piece.length === 0) continue;
      const innerToken = addedToken(added, piece);
      if (innerToken === undefined) section(piece, i, out);
      else out.push(innerToken.id);
    }
  }
}

/** The added tokens by content, and the length of the longest. */
interface AddedTokens {
  readonly byContent: ReadonlyMap<string, AddedToken>;
  readonly longest: number;
}

/** The added token a whole stretch of text is, if any. */
function addedToken(added: AddedTokens, text: string): AddedToken | undefined {
  // Hashing a long stretch only to miss would cost a pass over it.
  return text.length > added.longest ? undefined : added.byContent.get(text);
}

type Split = (text: string) => string[];

/**
 * A splitter's `split`, skipped for a text in which no added token starts:
 * one pass over its code units against the trie's first ones, instead of a
 * trie walk from each of them. The result is the same: without a token in
 * it, the library's splitter gives the text whole.
 */
function quickSplitter(splitter: DictionarySplitter): Split {
  const split: Split = (text) => splitter.split(text);
  const trie = splitter.trie;
  if (typeof trie !== "object" || trie === null) return split;
  const starts = new Uint8Array(0x10000);
  for (const key of Object.keys(trie)) {
    // Any other key (an empty token's end mark) keeps the library's walk.
    if (key.length !== 1) return split;
    starts[key.charCodeAt(0)] = 1;
  }
  return (text) => {
    for (let i = 0; i < text.length; i++) {
      if (starts[text.charCodeAt(i)] === 1) return splitter.split(text);
    }
    return text.length === 0 ? [] : [text];
  };
}

/** The whitespace an added token's `lstrip`/`rstrip` takes from its neighbours, in place, in order. */
function stripAround(parts: string[], added: AddedTokens): string[] {
  if (parts.length < 2) return parts;
  for (let i = 0; i < parts.length; i++) {
    const token = addedToken(added, parts[i]!);
    if (token === undefined) continue;
    if (token.lstrip && i > 0) parts[i - 1] = parts[i - 1]!.trimEnd();
    if (token.rstrip && i < parts.length - 1) {
      parts[i + 1] = parts[i + 1]!.trimStart();
    }
  }
  return parts;
}

/**
 * The ids the post-processor puts before and after the text's: its classes
 * only concatenate, never reading the tokens, so one placeholder token
 * shows where the text's go.
 */
function specialTokensAround(
  processor: LibraryTokenizer["post_processor"],
  add: boolean,
  idOf: (token: string) => number,
): [number[], number[]] | undefined {
  if (processor === null) return [[], []];
  const placeholder = {};
  let tokens: unknown;
  try {
    tokens = processor([placeholder], null, add).tokens;
  } catch {
    return undefined;
  }
  if (!Array.isArray(tokens)) return undefined;
  const at = tokens.indexOf(placeholder);
  if (at < 0 || tokens.lastIndexOf(placeholder) !== at) return undefined;
  const ids = (list: unknown[]) => list.map((token) => idOf(token as string));
  return [ids(tokens.slice(0, at)), ids(tokens.slice(at + 1))];
}

/** The post-processors of the library (0.2.x) that only concatenate special tokens. */
function knownPostProcessor(config: unknown, depth: number): boolean {
  if (config === null || config === undefined) return true;
  if (!isRecord(config) || depth > 8) return false;
  switch (config.type) {
    case "TemplateProcessing":
    case "ByteLevel":
    case "BertProcessing":
    case "RobertaProcessing":
      return true;
    case "Sequence":
      return Array.isArray(config.processors) &&
        config.processors.every((inner) =>
          knownPostProcessor(inner, depth + 1)
        );
    default:
      return false;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
