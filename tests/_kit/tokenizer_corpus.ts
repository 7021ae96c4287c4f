/**
 * Texts the tokenizer exactness test compares with the native oracle. No
 * character here was assigned after Unicode 15.1: the pure-JS tokenizer reads
 * the runtime's ICU tables, so newer characters may differ (REFERENCE.md 4).
 *
 * @module
 */
import { ProseGenerator } from "../../bench/_local_bench_text.ts";
import { mulberry32, type Rand } from "./prng.ts";

const CODE = `import { serve } from "./server.ts";

export async function main(argv: string[]): Promise<number> {
\tconst port = Number(argv[0] ?? "8080");
    if (!Number.isInteger(port)) {
        throw new RangeError(\`bad port: \${port}\`);
    }
    await serve({ port }); // 0x1F, 3.14e-10, 1_000_000
    return 0;
}
`;

const PYTHON = `def fib(n: int) -> int:
    """Return the n-th Fibonacci number."""
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


print(f"{fib(90):,}")\r\n`;

/** Texts with no special tokens in them. */
export const PLAIN_TEXTS: readonly string[] = [
  "",
  " ",
  "Hello, world!",
  "The quick brown fox jumps over the lazy dog. It's 5 o'clock, isn't it?",
  "  leading and trailing spaces  ",
  "don't won't can't I'm you're we'll they'd HELLO'S",
  CODE,
  PYTHON,
  "SELECT id, name FROM users WHERE created_at > '2024-01-01' ORDER BY 2 DESC;",
  '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3.0, "1": [1e-7, -0.5]}}',
  "中文分词测试：今天天气很好，我们去公园散步吧。",
  "日本語のテキストです。カタカナとひらがな、漢字が混ざっています。",
  "한국어 텍스트도 포함합니다. 안녕하세요!",
  "Ελληνικά, русский текст, עברית, العربية, हिन्दी, ไทย",
  "Mixed: English 中文 日本語 한국어 Русский 123 ٤٥٦ ١٢٣",
  "Emoji: 😀😃😄 👍🏽 👩‍💻 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷🇯🇵 ❤️ ✅ 🧑🏿‍🚀",
  "ZWJ alone\u200d and ZWNJ\u200c and BOM\ufeff and NBSP\u00a0here",
  "tabs\t\t\tand\tnewlines\n\n\n\nand spaces          end",
  " ".repeat(257),
  "\n".repeat(64) + "x" + "\t".repeat(33),
  "line one\r\nline two\r\n\r\nline four\rline five\r\n",
  "Numbers: 0 7 42 1234 12345678901234567890 3.14159 -2.5e10 1,000,000 0x7fff",
  "Dates 2026-11-30T12:00:00Z, phone +1 (555) 010-9999, v1.2.3-rc.4",
  'https://example.com/path?q=a%20b&x=1#frag <tag attr="v">&amp;</tag>',
  "Ünïcödé àccents: café naïve résumé Ångström façade ß ẞ ﬁ ﬂ ① ⅷ ㎏",
  "Math: ∀x∈ℝ, ∃y: x² + y² ≤ 1 → ∫₀¹ f(x) dx ≈ π/4 ∑ √ ∞",
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "____________________________________________________====----****####",
  "Markdown **bold** _it_ `code` > quote\n- item\n1. item\n\n| a | b |\n|---|---|",
];

/**
 * Texts with a family's added tokens embedded in them: glued to words,
 * spaced, at the start and end, and repeated.
 *
 * @param tokens Special token texts of the family.
 * @returns The texts.
 */
export function textsWithTokens(tokens: readonly string[]): string[] {
  const texts: string[] = [];
  for (const token of tokens) {
    texts.push(
      token,
      `${token}user\nHello${token}`,
      `before ${token} after`,
      `text${token}text ${token}  ${token}\n`,
      `${token}${token}${token}`,
      `\n\n${token}\n\n中文${token}😀 `,
    );
  }
  return texts;
}

const PUNCTUATION = [..."!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~«»¿¡…—–·"];
const SPACES = [" ", "  ", "\t", "\n", "\n\n", "\r\n", "\u00a0", "\u3000"]
  .concat(["\u0085", "\ufeff", " \n ", "    ", "\u2028", "\u200b"]);
const SCRIPTS = [
  "café",
  "naïve",
  "Ångström",
  "straße",
  "中文分词",
  "日本語です",
  "한국어",
  "русский",
  "Ελληνικά",
  "العربية",
  "हिन्दी",
  "ไทย",
  "עברית",
  "ﬁ",
  "①",
];
const EMOJI = ["😀", "👍🏽", "👩‍💻", "🇫🇷", "❤️", "🧑🏿‍🚀", "👨‍👩‍👧‍👦"];
const LETTERS = "etaoinshrdlucmfwypvbgkjqxz";
const CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL"];

function pick<T>(rand: Rand, list: readonly T[]): T {
  return list[Math.floor(rand() * list.length)]!;
}

/** A word of fresh letters, sometimes capitalized or longer than any scan limit. */
function freshWord(rand: Rand): string {
  const long = rand() < 0.05;
  const length = long
    ? 40 + Math.floor(rand() * 60)
    : 1 + Math.floor(rand() * 9);
  let word = "";
  for (let i = 0; i < length; i++) word += pick(rand, [...LETTERS]);
  return rand() < 0.2 ? word[0]!.toUpperCase() + word.slice(1) : word;
}

/**
 * Texts mixing everything a normalizer, a pre-tokenizer and a model branch
 * on: the plain texts, added tokens glued and spaced, 120 random mixes of
 * fresh words, whitespace of every kind (U+0085 and U+FEFF among them),
 * punctuation runs, numbers, scripts, emoji, contractions and long runs,
 * then ~120 KB of fresh words (past any word cache) and lone surrogates.
 *
 * @param seed The seed: the same seed gives the same texts.
 * @param addedTokens The tokenizer's added tokens, some of them embedded.
 * @returns The texts.
 */
export function mixedTexts(
  seed: number,
  addedTokens: readonly string[],
): string[] {
  const rand = mulberry32(seed);
  const prose = new ProseGenerator(seed);
  const texts: string[] = [...PLAIN_TEXTS];
  texts.push(...textsWithTokens(addedTokens.slice(0, 6)));
  for (let t = 0; t < 120; t++) {
    let text = rand() < 0.3 ? prose.text(200) : "";
    const parts = 5 + Math.floor(rand() * 60);
    for (let i = 0; i < parts; i++) {
      const roll = rand();
      if (roll < 0.35) text += freshWord(rand);
      else if (roll < 0.5) text += pick(rand, SPACES);
      else if (roll < 0.6) {
        text += pick(rand, PUNCTUATION).repeat(1 + Math.floor(rand() * 3));
      } else if (roll < 0.68) {
        text += String(
          Math.floor(rand() * 10 ** (1 + Math.floor(rand() * 12))),
        );
      } else if (roll < 0.76) {
        text += pick(rand, SCRIPTS).repeat(1 + Math.floor(rand() * 20));
      } else if (roll < 0.82) text += pick(rand, EMOJI);
      else if (roll < 0.86) text += pick(rand, CONTRACTIONS);
      else if (roll < 0.9 && addedTokens.length > 0) {
        text += pick(rand, addedTokens);
      } else if (roll < 0.93) {
        text += pick(rand, [..."aeé"]).repeat(30 + Math.floor(rand() * 120));
      } else text += " " + freshWord(rand);
    }
    texts.push(text);
  }
  // Fresh words past the word caches' 10,000 entries per generation, then again.
  const many = new ProseGenerator(seed + 1).text(120_000);
  texts.push(many, many.slice(50_000), "\ud800 lone \udc00 surrogates \ud83d");
  return texts;
}
