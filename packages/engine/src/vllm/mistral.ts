/**
 * What vLLM's chat path does to a request for a model in the `mistral`
 * tokenizer mode, and its `/tokenize` does not: every assistant message
 * gets a `tool_calls` list (`maybe_serialize_tool_calls`), and tool-call ids
 * longer than 9 characters are cut to their last 9, in assistant calls and
 * tool results alike (`truncate_tool_call_ids`, `vllm/tokenizers/mistral.py`
 * of vLLM main). Ids from another provider (`call_` and 24 characters) are
 * all cut.
 *
 * @module
 */
import { isJsonObject } from "../common/request.ts";

/** Mistral's tool-call id length. */
const ID_LENGTH = 9;

/**
 * A `/tokenize` chat body with its messages as vLLM's chat path gives them
 * to a model in `mistral` mode.
 *
 * @param payload The body, never mutated.
 * @returns The body, messages copied where they change.
 *
 * @example Ids cut to their last 9 characters
 * ```ts
 * import { mistralChatBody } from "@incontext/engine/vllm";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const body = mistralChatBody({
 *   messages: [{ role: "tool", tool_call_id: "call_abc123456789", content: "ok" }],
 * });
 * deepStrictEqual(body.messages, [{ role: "tool", tool_call_id: "123456789", content: "ok" }]);
 * ```
 */
export function mistralChatBody(
  payload: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const { messages } = payload;
  if (!Array.isArray(messages)) return { ...payload };
  return { ...payload, messages: messages.map(mistralMessage) };
}

function mistralMessage(message: unknown): unknown {
  if (!isJsonObject(message)) return message;
  if (message.role === "assistant") {
    const calls = message.tool_calls;
    return {
      ...message,
      tool_calls: Array.isArray(calls)
        ? calls.map((call: unknown) =>
          isJsonObject(call) && typeof call.id === "string"
            ? { ...call, id: lastChars(call.id) }
            : call
        )
        : calls ?? [],
    };
  }
  if (
    (message.role === "tool" || message.role === "tool_results") &&
    typeof message.tool_call_id === "string"
  ) return { ...message, tool_call_id: lastChars(message.tool_call_id) };
  return message;
}

/** Python's `id[-9:]` when `len(id) > 9`: counted in code points. */
function lastChars(id: string): string {
  const chars = [...id];
  return chars.length > ID_LENGTH ? chars.slice(-ID_LENGTH).join("") : id;
}
