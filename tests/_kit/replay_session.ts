/**
 * A scripted multi-turn coding-assistant session for the anchored replay
 * test: a system prompt, then turns of a user message and the assistant's
 * reply, mixing English prose, code and CJK text, with no reasoning content.
 * Replies run from a few hundred to a few thousand tokens; the replay's
 * upstream counts every prompt and reply with the real Qwen3 tokenizer.
 *
 * @module
 */

/** The tools the agent offers on every turn, as coding agents do. */
export const TOOLS: readonly Record<string, unknown>[] = [
  tool("read_file", "Read a file of the repository, or a range of its lines.", {
    path: {
      type: "string",
      description: "Path relative to the repository root",
    },
    start_line: { type: "integer", description: "First line, 1-based" },
    end_line: { type: "integer", description: "Last line, inclusive" },
  }, ["path"]),
  tool("write_file", "Create or overwrite a file with the given content.", {
    path: {
      type: "string",
      description: "Path relative to the repository root",
    },
    content: { type: "string", description: "The complete new content" },
  }, ["path", "content"]),
  tool(
    "run_tests",
    "Run the test suite, or the tests of the given files, and return the report.",
    {
      files: {
        type: "array",
        items: { type: "string" },
        description: "Test files; all when empty",
      },
      filter: {
        type: "string",
        description: "Only tests whose name contains this text",
      },
    },
    [],
  ),
  tool("search", "Search the repository for a regular expression.", {
    pattern: {
      type: "string",
      description: "An ECMAScript regular expression",
    },
    glob: {
      type: "string",
      description: "Only files matching this glob, e.g. src/**/*.ts",
    },
  }, ["pattern"]),
];

function tool(
  name: string,
  description: string,
  properties: Record<string, unknown>,
  required: string[],
): Record<string, unknown> {
  return {
    type: "function",
    function: {
      name,
      description,
      parameters: { type: "object", properties, required },
    },
  };
}

/** One turn: what the user appends, and what the assistant answers. */
export interface ReplayTurn {
  readonly user: string;
  readonly reply: string;
}

export const SYSTEM_PROMPT =
  `You are a senior software engineer pairing with the user on a TypeScript service that budgets LLM requests.
Answer precisely. Prefer small, well-named functions, explicit error handling and tests for every behaviour.
When you show code, show complete files or complete functions, never fragments with ellipses.
When the user writes in Chinese or Japanese, answer in the same language, keeping identifiers in English.
Never invent APIs: if you are unsure whether a function exists, say so and suggest how to check.`;

const PROSE = [
  `The budget is the number of output tokens a request may ask for without crossing the compression window. The host compresses its history once the prompt reaches the window, so an output cap that ignores the prompt either wastes context or makes the server reject the request. Counting the prompt exactly turns the cap into simple arithmetic: the window minus the prompt, bounded by whatever the caller asked for.`,
  `A proxy in front of the model server sees every request and every response. That position is what makes usage anchoring possible: each response carries the server's own count of the prompt it just processed, and the next request of the same conversation repeats that prompt, adds the reply, and appends one or two new messages. Only those new messages are unknown.`,
  `Caching matters less than it seems. Most requests of an agent differ from the previous one by a suffix, so a cache keyed on the whole payload rarely hits; what helps is not hashing the whole conversation again and again, which is why the anchor store hashes each prefix once in a single pass.`,
  `Errors deserve the same care as the happy path. A count endpoint that answers 503 must not stall the request: the budget falls back to an estimate with a safety margin, logs the error's type without its text, and the request goes on. Retrying on the request path would only multiply the latency the user already feels.`,
  `Tests should talk to real sockets where the network is the point. A fake server on port zero costs a few milliseconds and catches the bugs a mocked fetch never sees: headers written twice, bodies read twice, streams that never close, and timers that keep the process alive after the test has finished.`,
  `The rough estimator is deliberately simple. Four characters per token is close for English prose, too generous for code full of punctuation, and too stingy for Chinese, where a single character is often a token on its own. Its error is why the margin exists, and why an exact count, where one is possible, is worth a round trip.`,
  `Streaming changes where the usage arrives. With include_usage set, the server sends one last chunk whose choices array is empty and whose usage field holds the totals, just before the terminating data line. The proxy must pass that chunk through untouched, because the host reads it too, and must read it without delaying any byte.`,
];

const CJK = [
  `预算就是一个请求在不越过压缩窗口的前提下可以申请的输出令牌数量。宿主程序在提示长度达到窗口时会压缩历史记录，因此如果输出上限不考虑提示长度，要么浪费上下文，要么让服务器拒绝请求。精确计算提示长度之后，上限就变成了简单的算术：窗口减去提示，再受调用方要求的上限约束。`,
  `使用量锚定的思路来自于对话的增长方式：每一轮请求都会重复上一轮的全部消息，再加上助手的回复和一两条新消息。服务器在上一轮响应中已经给出了精确的提示令牌数和生成令牌数，所以只需要估算新追加的那部分消息即可，误差因此被限制在很小的范围内。`,
  `测试应该覆盖失败的情况：计数服务返回五百错误、连接被拒绝、响应体不是合法的JSON、超时等等。每一种失败都必须让预算回退到估算值，并且日志中只能出现错误类型，不能出现提示文本、网址或者密钥。`,
  `日本語の説明も加えておきます。使用量アンカーは、前回の応答に含まれるトークン数を基準にして、新しく追加されたメッセージだけを見積もる方法です。会話が長くなるほど、見積もりが占める割合は小さくなり、全体の誤差も小さくなります。`,
  `中文和日文的文本在粗略估算中按每个字符一个令牌计算，而真实的分词器往往会把常见的词语合并成一个令牌，所以粗略估算通常会偏高。对于英文，粗略估算按每四个字符一个令牌计算，通常比较接近。代码中有大量的标点符号，粗略估算往往会偏低。`,
];

/** A TypeScript module of `count` small functions, each distinct. */
function codeListing(name: string, count: number): string {
  const lines = [
    "```ts",
    `// ${name}.ts`,
    `import { strictEqual } from "node:assert/strict";`,
    "",
  ];
  for (let i = 0; i < count; i++) {
    const field =
      ["prompt", "window", "margin", "cap", "limit", "reply"][i % 6];
    lines.push(
      `/** Returns the ${field} of step ${i}, clamped to [0, ${
        1024 << (i % 5)
      }]. */`,
      `export function ${field}Step${i}(input: { ${field}: number; scale?: number }): number {`,
      `  const scale = input.scale ?? ${(i % 3) + 1};`,
      `  const value = Math.round(input.${field} * scale) - ${i * 7};`,
      `  if (!Number.isFinite(value)) throw new RangeError(\`${field}Step${i}: bad input \${input.${field}}\`);`,
      `  return Math.min(Math.max(value, 0), ${1024 << (i % 5)});`,
      "}",
      "",
      `Deno.test("${field}Step${i}() clamps", () => {`,
      `  strictEqual(${field}Step${i}({ ${field}: ${i + 3} }), Math.max(${
        i + 3
      } * ${(i % 3) + 1} - ${i * 7}, 0));`,
      "});",
      "",
    );
  }
  lines.push("```");
  return lines.join("\n");
}

function pick(list: readonly string[], start: number, count: number): string {
  const out: string[] = [];
  for (let i = 0; i < count; i++) out.push(list[(start + i) % list.length]!);
  return out.join("\n\n");
}

/** The session's turns, in order. */
export const TURNS: readonly ReplayTurn[] = [
  {
    user:
      "Explain what the budget function does and why the window matters more than the context length.",
    reply: `## The budget\n\n${pick(PROSE, 0, 4)}`,
  },
  {
    user: "Write the clamp helpers with tests, one function per step.",
    reply: `Here is the module.\n\n${codeListing("clamp_steps", 14)}\n\n${
      PROSE[4]
    }`,
  },
  {
    user: "用中文解释一下使用量锚定的原理，以及为什么误差很小。",
    reply: `## 使用量锚定\n\n${pick(CJK, 0, 4)}`,
  },
  {
    user:
      "This test fails with `AssertionError: 12 !== 13` on the second step:\n```ts\nstrictEqual(promptStep0({ prompt: 5 }), 13);\n```\nWhy?",
    reply:
      `The expected value is off by one: \`promptStep0\` multiplies by its scale (1 for step 0) and subtracts 0, so 5 stays 5, not 13. The 12 in the message comes from a different call.\n\n${
        pick(PROSE, 3, 2)
      }\n\n${codeListing("fixed_test", 3)}`,
  },
  {
    user: "Now stream the answer and explain where the usage chunk goes.",
    reply: `${PROSE[6]}\n\n${PROSE[1]}\n\n${
      codeListing("stream_usage", 6)
    }\n\n${PROSE[2]}`,
  },
  {
    user: "日本語で、アンカーの誤差について簡単に説明してください。",
    reply: `${CJK[3]}\n\n${CJK[4]}\n\n${CJK[1]}`,
  },
  {
    user: "Give me the whole helper module again, with more steps this time.",
    reply: `The full module:\n\n${
      codeListing("clamp_steps_v2", 30)
    }\n\nEvery function is covered by its own test.`,
  },
  {
    user: "What should the logs contain when a count fails? Keep it short.",
    reply: `${PROSE[3]}\n\n${CJK[2]}`,
  },
  {
    user:
      "Summarise the trade-offs of the rough estimator in English and Chinese.",
    reply: `${PROSE[5]}\n\n${CJK[4]}\n\n${pick(PROSE, 0, 2)}`,
  },
  {
    user:
      "Add a test that plants a secret in the prompt and checks the logs.\n\n```ts\nconst secret = `sk-canary-${crypto.randomUUID()}`;\n```",
    reply: `${codeListing("canary", 8)}\n\n${PROSE[4]}\n\n${CJK[2]}`,
  },
  {
    user: "Thanks. One last review of everything, please.",
    reply: `${pick(PROSE, 0, 7)}\n\n${pick(CJK, 0, 5)}\n\n${
      codeListing("review", 10)
    }`,
  },
  {
    user: "Great, that's all for today.",
    reply: "Glad to help. Run the tests once more before you commit.",
  },
];
