/**
 * tokenizer.json shapes beyond the four families' own, each a family's
 * file with one part changed so that loadTokenizer() takes a branch the
 * families do not: other pre-tokenizers and Split behaviors, normalizers,
 * added-token flags, unknown tokens and byte fallback, another model. The
 * conformance suite compares each with the Rust crate over a large corpus;
 * the main suite pins the crate's ids on a few texts.
 *
 * @module
 */
import { MODEL_FILES } from "./model_files.ts";

/** A parsed tokenizer.json. */
export type TokenizerJson = Record<string, unknown>;

/** A shape: a family's tokenizer.json changed. */
export interface TokenizerShape {
  /** What the shape exercises. */
  readonly name: string;
  /** The family whose files it changes. */
  readonly family: string;
  /** The changed tokenizer.json (the argument is a fresh copy). */
  readonly change: (json: TokenizerJson) => TokenizerJson;
  /** Texts that reach the shape's branch, besides a generated corpus. */
  readonly texts: readonly string[];
}

/** A family's tokenizer.json, parsed afresh. */
export async function familyJson(family: string): Promise<TokenizerJson> {
  const files = MODEL_FILES.find((model) => model.family === family)!;
  return JSON.parse(await Deno.readTextFile(files.tokenizerPath));
}

const BYTES = {
  type: "ByteLevel",
  add_prefix_space: false,
  trim_offsets: false,
  use_regex: false,
};

/** A Split in front of ByteLevel's byte mapping. */
function split(
  pattern: Record<string, string>,
  behavior: string,
  invert = false,
) {
  return {
    type: "Sequence",
    pretokenizers: [
      { type: "Split", pattern, behavior, invert },
      BYTES,
    ],
  };
}

function model(json: TokenizerJson): Record<string, unknown> {
  return json.model as Record<string, unknown>;
}

function addedTokens(json: TokenizerJson): Record<string, unknown>[] {
  return json.added_tokens as Record<string, unknown>[];
}

/** The shapes, each with the texts that reach its branch. */
export const TOKENIZER_SHAPES: readonly TokenizerShape[] = [
  {
    name: "ByteLevel with its own regex and a prefix space",
    family: "qwen3",
    change: (json) => ({
      ...json,
      pre_tokenizer: {
        type: "ByteLevel",
        add_prefix_space: true,
        trim_offsets: true,
        use_regex: true,
      },
    }),
    texts: ["\r\n\ufeff", " \ufeffx", "a\u0085 b", "Hi there"],
  },
  {
    name: "Split MergedWithPrevious",
    family: "qwen3",
    change: (json) => ({
      ...json,
      pre_tokenizer: split({ String: " " }, "MergedWithPrevious"),
    }),
    texts: ["a b  c ", "  lead", "one two"],
  },
  {
    name: "Split MergedWithNext",
    family: "qwen3",
    change: (json) => ({
      ...json,
      pre_tokenizer: split({ Regex: "\\s+" }, "MergedWithNext"),
    }),
    texts: ["a b  c ", "  lead", "one two"],
  },
  {
    name: "Split Contiguous",
    family: "qwen3",
    change: (json) => ({
      ...json,
      pre_tokenizer: split({ Regex: "\\p{P}" }, "Contiguous"),
    }),
    texts: ["a,,b..c!", "...x", "x?!"],
  },
  {
    name: "Split Removed",
    family: "qwen3",
    change: (json) => ({
      ...json,
      pre_tokenizer: split({ Regex: "\\s" }, "Removed"),
    }),
    texts: ["a b  c ", "\u0085x\ufeffy"],
  },
  {
    name: "Split inverted, Isolated",
    family: "qwen3",
    change: (json) => ({
      ...json,
      pre_tokenizer: split({ Regex: "\\p{L}+" }, "Isolated", true),
    }),
    texts: ["ab12cd", "12 ab", "x"],
  },
  {
    name: "a Split that leaves gaps, then Whitespace",
    family: "qwen3",
    change: (json) => ({
      ...json,
      pre_tokenizer: {
        type: "Sequence",
        pretokenizers: [
          {
            type: "Split",
            pattern: { Regex: "\\p{N}{1,3}" },
            behavior: "Isolated",
            invert: false,
          },
          { type: "Whitespace" },
        ],
      },
    }),
    texts: ["naïve 12345 x_y", "\u0085x"],
  },
  {
    name: "WhitespaceSplit, then ByteLevel",
    family: "qwen3",
    change: (json) => ({
      ...json,
      pre_tokenizer: {
        type: "Sequence",
        pretokenizers: [{ type: "WhitespaceSplit" }, BYTES],
      },
    }),
    texts: ["a\u0085 b", "a\ufeff b"],
  },
  {
    name: "BertPreTokenizer, then ByteLevel",
    family: "qwen3",
    change: (json) => ({
      ...json,
      pre_tokenizer: {
        type: "Sequence",
        pretokenizers: [{ type: "BertPreTokenizer" }, BYTES],
      },
    }),
    texts: ["Hello, world! $5 + ¿qué?", " \ufeff a\u0085b "],
  },
  {
    name: "NFD, StripAccents, Strip and NFKC normalizers",
    family: "qwen3",
    change: (json) => ({
      ...json,
      normalizer: {
        type: "Sequence",
        normalizers: [
          { type: "NFD" },
          { type: "StripAccents" },
          { type: "Strip", strip_left: true, strip_right: true },
          { type: "NFKC" },
        ],
      },
    }),
    texts: ["  café ﬁ ①  ", "\u0085 x \ufeff"],
  },
  {
    name: "added tokens that strip and are normalized, behind Lowercase",
    family: "qwen3",
    change: (json) => ({
      ...json,
      normalizer: { type: "Lowercase" },
      added_tokens: addedTokens(json).map((token, i) => ({
        ...token,
        lstrip: i % 2 === 0,
        rstrip: i % 3 === 0,
        normalized: i % 4 === 0,
        special: i % 4 !== 0,
      })),
    }),
    texts: [
      "a \u0085<|endoftext|>\u0085 b",
      "ΟΔΟΣ Σ",
      "x <|im_start|>  y",
    ],
  },
  {
    name: "a normalized added token that only BPE makes",
    family: "qwen3",
    // The normalizer turns "Q" into the byte-level space, so the token's
    // normalized content "Ġhello" never occurs in the text, but BPE makes
    // it from " hello": the crate gives the model's own id for it.
    change: (json) => ({
      ...json,
      normalizer: {
        type: "Replace",
        pattern: { String: "Q" },
        content: "\u0120",
      },
      added_tokens: [...addedTokens(json), {
        id: 151700,
        content: "Qhello",
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: true,
        special: false,
      }],
    }),
    texts: [" hello", "say hello hello", "Qhello hello"],
  },
  {
    name: "single_word added tokens",
    family: "qwen3",
    change: (json) => ({
      ...json,
      added_tokens: [...addedTokens(json), {
        id: 151700,
        content: "hello",
        single_word: true,
        lstrip: false,
        rstrip: false,
        normalized: false,
        special: false,
      }],
    }),
    texts: ["hello", "say hello!", "hellothere", "ahello", "héllo hello_x"],
  },
  {
    name: "unknown tokens fused within a word, behind Whitespace",
    family: "qwen3",
    change: (json) => ({
      ...json,
      model: { ...model(json), unk_token: "!", fuse_unk: true },
      normalizer: null,
      pre_tokenizer: { type: "Whitespace" },
    }),
    texts: ["é é café 😀 😀", "中文 分词", "éé!é"],
  },
  {
    name: "unknown tokens fused, the unknown token a digit",
    family: "qwen3",
    // Qwen3 splits digits one by one: "11" is two words, both "unknown".
    change: (json) => ({
      ...json,
      model: { ...model(json), unk_token: "1", fuse_unk: true },
    }),
    texts: ["1111", "a 11 1 x1", "121"],
  },
  {
    name: "ignore_merges, and a Bert post-processor",
    family: "qwen3",
    change: (json) => ({
      ...json,
      model: { ...model(json), ignore_merges: true },
      post_processor: {
        type: "BertProcessing",
        sep: ["<|im_end|>", 151645],
        cls: ["<|im_start|>", 151644],
      },
    }),
    texts: ["Hello world", ""],
  },
  {
    name: "Llama 2's normalizers, no pre-tokenizer",
    family: "gemma3",
    change: (json) => ({
      ...json,
      normalizer: {
        type: "Sequence",
        normalizers: [
          { type: "Prepend", prepend: "\u2581" },
          { type: "Replace", pattern: { String: " " }, content: "\u2581" },
        ],
      },
      pre_tokenizer: null,
    }),
    texts: ["Hello world", " lead", "a  b"],
  },
  {
    name: "byte fallback without 4-byte leads, unknown tokens not fused",
    family: "gemma3",
    change: (json) => {
      const vocab = { ...model(json).vocab as Record<string, number> };
      delete vocab["<0xF0>"];
      return { ...json, model: { ...model(json), vocab, fuse_unk: false } };
    },
    // A 4-byte character outside the vocabulary is unknown; the crate adds
    // a pending unknown token after the byte fallback that follows it.
    texts: ["\u{10348}\ua66e x", "\u{10348}\u{10348}y", "\u{1D11E}"],
  },
  {
    name: "a WordLevel model behind Whitespace",
    family: "qwen3",
    change: (json) => ({
      ...json,
      model: {
        type: "WordLevel",
        vocab: { "[UNK]": 0, hello: 1, world: 2, "!": 3, "café": 4 },
        unk_token: "[UNK]",
      },
      normalizer: null,
      pre_tokenizer: { type: "Whitespace" },
      post_processor: null,
      added_tokens: [],
    }),
    texts: ["hello world!", "café hello", "naïve"],
  },
];
