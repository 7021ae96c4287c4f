/**
 * The Rust `tokenizers` crate's `encode` (`TokenizerImpl::encode_single_sequence`)
 * built from `tokenizer.json` alone, for the shapes the engine reproduces:
 * a BPE model without word prefixes or suffixes or dropout, or a
 * WordLevel model (not behind ByteLevel), behind the
 * normalizers of normalizers.ts, the pre-tokenizers of pre_tokenizers.ts
 * and the post-processors of post_processor.ts. The added tokens split the
 * text first (as written, then after normalization), the normalizer runs
 * on each stretch between them, the pre-tokenizer cuts it into words, and
 * the model merges each word. Any other shape gives `undefined`, and the
 * tokenizer takes @huggingface/tokenizers' public `Tokenizer`
 * (library_tokenizer.ts).
 *
 * @module
 */
import { EngineError } from "../common/errors.ts";
import { AddedVocabulary, type Piece } from "./added_vocabulary.ts";
import { BpeMerges } from "./bpe_merges.ts";
import { BpeModel } from "./bpe_model.ts";
import { type Normalize, normalizerOf } from "./normalizers.ts";
import { type PreTokenizer, preTokenizerOf } from "./pre_tokenizers.ts";
import { type Affixes, affixesOf } from "./post_processor.ts";

/** A tokenizer.json's pipeline, run by the engine. */
export interface Pipeline {
  /**
   * The ids of a text.
   *
   * @param text The text.
   * @param addSpecialTokens Whether the post-processor's special tokens are added.
   * @param splitAdded Whether the added tokens split the text; `false`
   * encodes their text as any other (tiktoken's `encode_ordinary`).
   * @returns The ids.
   */
  encode(
    text: string,
    addSpecialTokens: boolean,
    splitAdded?: boolean,
  ): number[];
  /** The model's vocabulary: each string's id. */
  readonly vocab: ReadonlyMap<string, number>;
  /** The model's string of each id. */
  readonly strings: readonly string[];
  /** Each added token's content, by id. */
  readonly added: ReadonlyMap<number, string>;
}

/**
 * Builds the pipeline of a parsed tokenizer.json, or `undefined` for a
 * shape the engine does not reproduce.
 *
 * @example Encode with a small BPE
 * ```ts
 * import { buildPipeline } from "./pipeline.ts";
 * const pipeline = buildPipeline({
 *   model: { type: "BPE", vocab: { a: 0, b: 1, ab: 2 }, merges: [["a", "b"]] },
 *   normalizer: null, pre_tokenizer: null, post_processor: null,
 *   decoder: null, added_tokens: [],
 * })!;
 * console.assert(pipeline.encode("aba", false).join() === "2,0");
 * ```
 *
 * @param json The parsed tokenizer.json.
 * @returns The pipeline, or `undefined`.
 */
export function buildPipeline(
  json: Readonly<Record<string, unknown>>,
): Pipeline | undefined {
  const normalize = normalizerOf(json.normalizer ?? null);
  const preTokenizer = preTokenizerOf(json.pre_tokenizer ?? null);
  const affixes = affixesOf(json.post_processor ?? null);
  if (
    normalize === undefined || preTokenizer === undefined ||
    affixes === undefined
  ) return undefined;
  const model = modelOf(json.model, preTokenizer.byteLevel);
  if (model === undefined) return undefined;
  const added = AddedVocabulary.of(json.added_tokens, model.vocab, normalize);
  if (added === undefined) return undefined;
  const steps = { added, normalize, preTokenizer, words: model.words };
  return {
    encode: (text, addSpecialTokens, splitAdded = true) =>
      encode(
        splitAdded ? steps : { ...steps, added: null },
        addSpecialTokens ? affixes : NO_AFFIXES,
        text,
      ),
    vocab: model.vocab,
    strings: model.strings,
    added: added.contents,
  };
}

const NO_AFFIXES: Affixes = { before: [], after: [] };

/** A model: appends the ids of words. */
interface Words {
  pushAll(words: readonly string[], out: number[]): void;
}

/** The steps of encode. */
interface Steps {
  /** `null`: no added token splits the text. */
  readonly added: AddedVocabulary | null;
  readonly normalize: Normalize | null;
  readonly preTokenizer: PreTokenizer;
  readonly words: Words;
}

function encode(steps: Steps, affixes: Affixes, text: string): number[] {
  const { added, normalize, preTokenizer, words } = steps;
  const out = [...affixes.before];
  const raw: Piece[] = [];
  if (added === null) raw.push(text);
  else added.splitRaw(text, raw);
  for (const piece of raw) {
    if (typeof piece === "number") {
      out.push(piece);
      continue;
    }
    const normalized = normalize === null ? piece : normalize(piece);
    const inner: Piece[] = [];
    if (added === null) inner.push(normalized);
    else added.splitNormalized(normalized, inner);
    for (const stretch of inner) {
      if (typeof stretch === "number") out.push(stretch);
      else words.pushAll(preTokenizer.split(stretch), out);
    }
  }
  for (const id of affixes.after) out.push(id);
  return out;
}

/** A model of tokenizer.json the engine reproduces. */
interface Model {
  /** Each vocabulary string's id. */
  readonly vocab: ReadonlyMap<string, number>;
  /** Each id's string. */
  readonly strings: readonly string[];
  readonly words: Words;
}

/**
 * The model of tokenizer.json as the crate reads it: BPE
 * (`models/bpe/serialization.rs`), without a word prefix or suffix or
 * dropout, or WordLevel not behind ByteLevel; `undefined` for any other,
 * or for a file the crate refuses.
 */
function modelOf(model: unknown, byteLevel: boolean): Model | undefined {
  if (!isRecord(model)) return undefined;
  const vocab = new Map<string, number>();
  const strings: string[] = [];
  if (!isRecord(model.vocab)) return undefined;
  for (const text in model.vocab) {
    const id = model.vocab[text];
    if (typeof id !== "number" || !(id >= 0 && id <= 0x7fffffff)) return;
    if (!Number.isInteger(id)) return undefined;
    vocab.set(text, id);
    strings[id] = text;
  }
  if (model.type === "WordLevel" && !byteLevel) {
    const unk = model.unk_token ?? "<unk>";
    if (typeof unk !== "string") return undefined;
    return { vocab, strings, words: wordLevel(vocab, unk) };
  }
  const flags = [model.fuse_unk, model.byte_fallback, model.ignore_merges];
  if (
    model.type !== "BPE" ||
    !isEmpty(model.continuing_subword_prefix) ||
    !isEmpty(model.end_of_word_suffix) ||
    !(model.dropout === undefined || model.dropout === null ||
      model.dropout === 0) ||
    !(model.unk_token === undefined || model.unk_token === null ||
      typeof model.unk_token === "string") ||
    !flags.every((flag) => flag === undefined || typeof flag === "boolean")
  ) return undefined;
  const merges = mergesOf(model.merges);
  const table = merges && BpeMerges.build(vocab, strings, merges);
  if (table === undefined) return undefined;
  const words = new BpeModel({
    vocab,
    merges: table,
    unkToken: typeof model.unk_token === "string" ? model.unk_token : null,
    fuseUnk: model.fuse_unk === true,
    byteFallback: model.byte_fallback === true,
    ignoreMerges: model.ignore_merges === true,
    ...(byteLevel ? { byteAlphabet: BYTE_ALPHABET } : {}),
  });
  return { vocab, strings, words };
}

/** The crate's WordLevel: a word's id, else the unknown token's. */
function wordLevel(vocab: ReadonlyMap<string, number>, unk: string): Words {
  return {
    pushAll(words, out) {
      for (const word of words) {
        const id = vocab.get(word) ?? vocab.get(unk);
        if (id === undefined) {
          throw new EngineError(
            "Cannot tokenize this text: tokenizer.json's unk_token is not in its vocabulary (the Rust tokenizers crate fails too)",
          );
        }
        out.push(id);
      }
    },
  };
}

/** The merges, each a pair, from either of the crate's formats ("a b" or ["a", "b"]). */
function mergesOf(merges: unknown): [string, string][] | undefined {
  if (!Array.isArray(merges)) return undefined;
  const pairs: [string, string][] = [];
  for (const merge of merges) {
    if (typeof merge === "string") {
      // The crate's legacy format: a line of two parts; "#version" lines are skipped.
      if (merge.startsWith("#version")) continue;
      const parts = merge.split(" ");
      if (parts.length !== 2) return undefined;
      pairs.push([parts[0]!, parts[1]!]);
    } else if (
      Array.isArray(merge) && merge.length === 2 &&
      typeof merge[0] === "string" && typeof merge[1] === "string"
    ) pairs.push([merge[0], merge[1]]);
    else return undefined;
  }
  return pairs;
}

/** GPT-2's byte alphabet (`bytes_char`): printable bytes stand for themselves, the others from U+0100 on. */
export const BYTE_ALPHABET: readonly string[] = (() => {
  const alphabet: string[] = [];
  let next = 256;
  for (let byte = 0; byte < 256; byte++) {
    const printable = byte >= 0x21 && byte <= 0x7e ||
      byte >= 0xa1 && byte <= 0xac || byte >= 0xae;
    alphabet.push(String.fromCharCode(printable ? byte : next++));
  }
  return alphabet;
})();

function isEmpty(value: unknown): boolean {
  return value === undefined || value === null || value === "";
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
