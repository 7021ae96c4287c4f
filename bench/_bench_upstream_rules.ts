/**
 * What the benchmarks' upstream answers when a benchmark steers it. The fake
 * upstream counts by a rule of its own, so a benchmark that checks the
 * proxy's counts against `usage` first tells the upstream each request's
 * count from a real tokenizer, as a real vLLM would report it, keyed by the
 * conversation and its length. Its reply is a rule the benchmark knows, so a
 * conversation's turns can be written, and counted, before they are sent.
 *
 * @module
 */

/** The upstream's path that takes `{ key, count }`. */
export const USAGE_PATH = "/bench/prompt-tokens";

/** The key of a request's messages: the first message (which names the conversation) and their number. */
export function usageKey(messages: readonly unknown[]): string {
  const first = messages[0] as { content?: unknown } | undefined;
  return `${messages.length}:${String(first?.content)}`;
}

/** The upstream's reply to a chat request with `messages`. */
export function replyTo(messages: readonly unknown[]): string {
  return `Noted: ${messages.length} messages.`;
}
