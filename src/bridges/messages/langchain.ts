/**
 * LangChain.js messages as the chat messages `ChatOpenAI` sends: the role
 * from the message type, string content or its blocks (tool-call and
 * reasoning blocks dropped), `name`, the tool calls with their arguments as
 * JSON, `tool_call_id` (`@langchain/openai` 1's
 * `convertMessagesToCompletionsMessageParams`). Only the messages' own
 * fields are read: no LangChain.js module is loaded. Media blocks and
 * standard-content (v1) messages are counted from a stand-in, and said so.
 *
 * @module
 */
import type { JsonObject } from "../../core/request.ts";
import type { Converted } from "./ai_sdk.ts";

type Fields = Record<string, unknown>;

const ROLES: Record<string, string> = {
  system: "system",
  ai: "assistant",
  human: "user",
  function: "function",
  tool: "tool",
};

// Blocks ChatOpenAI leaves out of the content it sends.
const DROPPED = new Set([
  "tool_use",
  "tool_call",
  "functionCall",
  "reasoning",
  "reasoning_content",
  "thinking",
]);
// Blocks ChatOpenAI converts to OpenAI media parts.
const MEDIA = new Set(["image", "audio", "file", "video"]);

/** What `ChatOpenAI` sends for LangChain.js messages. */
export function langchainToChat(messages: readonly unknown[]): Converted {
  const why = new Set<string>();
  const out = (messages as readonly Fields[]).map((message) =>
    chatMessage(message, why)
  );
  return why.size === 0
    ? { messages: out }
    : { messages: out, inexact: [...why].join("; ") };
}

function chatMessage(message: Fields, why: Set<string>): JsonObject {
  const type = String((message.getType as () => unknown).call(message));
  const meta = (message.response_metadata ?? {}) as Fields;
  if (meta.output_version === "v1") {
    why.add("LangChain.js standard-content (v1) messages are read as v0");
  }
  const role = type === "generic" ? String(message.role) : ROLES[type];
  const sent: Record<string, unknown> = {
    role: role ?? type,
    content: content(message.content, why),
  };
  if (message.name != null) sent.name = message.name;
  const kwargs = (message.additional_kwargs ?? {}) as Fields;
  if (kwargs.function_call != null) {
    sent.function_call = kwargs.function_call;
  }
  const calls = message.tool_calls;
  if (type === "ai" && Array.isArray(calls) && calls.length > 0) {
    sent.tool_calls = (calls as Fields[]).map((call) => ({
      id: call.id as string,
      type: "function",
      function: {
        name: call.name as string,
        arguments: JSON.stringify(call.args),
      },
    }));
  } else {
    if (kwargs.tool_calls != null) {
      sent.tool_calls = kwargs.tool_calls;
    }
    if (type === "tool" && message.tool_call_id != null) {
      sent.tool_call_id = message.tool_call_id;
    }
  }
  return sent as JsonObject;
}

function content(
  value: unknown,
  why: Set<string>,
): string | JsonObject[] {
  if (typeof value === "string") return value;
  if (!Array.isArray(value)) return "";
  return (value as Fields[]).flatMap((block) => {
    const type = block?.type;
    if (typeof type === "string" && DROPPED.has(type)) return [];
    if (typeof type === "string" && MEDIA.has(type)) {
      why.add(
        "LangChain.js media blocks are counted from a stand-in, not the media ChatOpenAI sends",
      );
      const url = typeof block.url === "string" ? block.url : "data:";
      return [{ type: "image_url", image_url: { url } }];
    }
    return [block as JsonObject];
  });
}
