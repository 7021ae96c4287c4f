/**
 * Random conversations for property tests: texts mixing scripts, emoji,
 * code, whitespace runs, CRLF and added-token look-alikes; turns with
 * reasoning, tool calls and tool results.
 *
 * @module
 */
import { WEATHER_TOOL } from "./tokenizer_conversations.ts";

/** Fragments random texts are made of. */
export const PIECES = [
  "Hello",
  " world",
  "the quick brown fox",
  "写一首关于秋天的短诗。",
  "東京の天気",
  "秋风起，落叶黄。",
  "👩‍💻",
  "🍂😀☀️",
  "```py\ndef f(x):\n    return x * 2\n```",
  "if (a && b) { return [1, 2.0, 3e-7]; }",
  "        ",
  "\t\t",
  "\n",
  "\n\n\n\n\n",
  "\r\n",
  "   \n  \n",
  "<|im_end|>",
  "<think>",
  "<|eot_id|>",
  "<end_of_turn>",
  "<｜end▁of▁sentence｜>",
  "<|im_",
  "<｜User",
  "｜>",
  "</tool_call>",
  "12345678901",
  "don't",
  "  trailing  ",
  "ÅÅ e\u0301 ﬁ",
];

/** A random text of 1 to `max` fragments. */
export function text(random: () => number, max: number): string {
  const n = 1 + Math.floor(random() * max);
  let out = "";
  for (let i = 0; i < n; i++) {
    out += PIECES[Math.floor(random() * PIECES.length)]!;
    if (random() < 0.4) out += " ";
  }
  return out;
}

/** One tool, as a chat request lists it. */
export const TOOLS = [WEATHER_TOOL];

/** A chat message. */
export type Message = Record<string, unknown>;

/** The next turn: a user message, then an assistant answer, maybe with tool calls. */
export function nextTurn(random: () => number, tools: boolean, turn: number) {
  const messages: Message[] = [{ role: "user", content: text(random, 6) }];
  const assistant: Message = { role: "assistant", content: text(random, 8) };
  if (random() < 0.5) assistant.reasoning_content = text(random, 5);
  if (tools && random() < 0.4) {
    const calls = 1 + Math.floor(random() * 2);
    assistant.content = random() < 0.5 ? null : "";
    assistant.tool_calls = Array.from({ length: calls }, (_, i) => ({
      id: `call_${turn}_${i}`,
      type: "function",
      function: {
        name: "get_weather",
        arguments: JSON.stringify({ city: text(random, 2), days: i + 1.0 }),
      },
    }));
    messages.push(assistant);
    for (let i = 0; i < calls; i++) {
      messages.push({
        role: "tool",
        tool_call_id: `call_${turn}_${i}`,
        content: `{"temp": ${10 + i}.5, "sky": ${
          JSON.stringify(text(random, 2))
        }}`,
      });
    }
    messages.push({ role: "assistant", content: text(random, 4) });
  } else {
    messages.push(assistant);
  }
  return messages;
}
