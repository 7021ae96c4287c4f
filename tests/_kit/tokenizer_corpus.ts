/**
 * Texts the tokenizer exactness test compares with the native oracle. No
 * character here was assigned after Unicode 15.1: the pure-JS tokenizer reads
 * the runtime's ICU tables, so newer characters may differ (REFERENCE.md 4).
 *
 * @module
 */

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
