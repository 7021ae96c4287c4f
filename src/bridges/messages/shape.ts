/**
 * Which SDK's shape a conversation is in: OpenAI chat messages, Responses
 * input items, AI SDK `ModelMessage`s or LangChain.js messages. Read from
 * the fields alone (no SDK is loaded); a message no shape explains is
 * refused with its index and the fields it lacks, never its content.
 *
 * @module
 */

/** The shapes a conversation is read in. */
export type ConversationShape = "chat" | "responses" | "ai-sdk" | "langchain";

/** What one message says: a shape, `"any"` (written alike by every SDK), or a problem. */
type MessageReading = ConversationShape | "any" | { readonly problem: string };

const ROLES = new Set([
  "system",
  "developer",
  "user",
  "assistant",
  "tool",
  "function",
]);

// Responses input items that are not messages.
const RESPONSES_ITEMS = new Set([
  "message",
  "function_call",
  "function_call_output",
  "reasoning",
  "item_reference",
  "custom_tool_call",
  "custom_tool_call_output",
  "computer_call",
  "computer_call_output",
  "file_search_call",
  "web_search_call",
  "image_generation_call",
  "code_interpreter_call",
  "local_shell_call",
  "local_shell_call_output",
  "mcp_call",
  "mcp_list_tools",
  "mcp_approval_request",
  "mcp_approval_response",
]);

const RESPONSES_PARTS = new Set([
  "input_text",
  "output_text",
  "input_image",
  "input_file",
  "input_audio",
]);
const AI_SDK_PARTS = new Set([
  "tool-call",
  "tool-result",
  "tool-approval-request",
  "tool-approval-response",
  "reasoning",
  "reasoning-file",
  "image",
  "custom",
]);
const CHAT_PARTS = new Set(["image_url", "input_audio", "refusal"]);

/**
 * The shape of a conversation: the one shape its messages name (messages
 * every SDK writes alike go with any), `"chat"` when none names one.
 *
 * @throws {TypeError} When a message fits no shape, or two messages name different ones.
 */
export function conversationShape(
  messages: readonly unknown[],
): ConversationShape {
  let found: { shape: ConversationShape; index: number } | undefined;
  messages.forEach((message, index) => {
    const reading = messageShape(message);
    if (typeof reading === "object") {
      throw new TypeError(
        `Cannot count the conversation as message ${index} ${reading.problem}: pass OpenAI chat messages, Responses input items, AI SDK ModelMessages or LangChain.js messages`,
      );
    }
    if (reading === "any") return;
    if (found === undefined) found = { shape: reading, index };
    else if (found.shape !== reading) {
      throw new TypeError(
        `Cannot count the conversation as message ${found.index} is ${
          NAMES[found.shape]
        } and message ${index} ${NAMES[reading]}: pass one shape`,
      );
    }
  });
  return found?.shape ?? "chat";
}

const NAMES: Record<ConversationShape, string> = {
  chat: "an OpenAI chat message",
  responses: "a Responses input item",
  "ai-sdk": "an AI SDK ModelMessage",
  langchain: "a LangChain.js message",
};

function messageShape(message: unknown): MessageReading {
  if (typeof message !== "object" || message === null) {
    return { problem: `is ${message === null ? "null" : typeof message}` };
  }
  if (Array.isArray(message)) {
    return { problem: "is an array (a LangChain.js tuple: pass the message)" };
  }
  const fields = message as Record<string, unknown>;
  if (
    typeof fields._getType === "function" ||
    typeof fields.getType === "function"
  ) {
    return "langchain";
  }
  if (fields.lc === 1 && fields.type === "constructor") {
    return {
      problem: "is a serialized LangChain.js message: pass the message",
    };
  }
  const { role, type } = fields;
  if (typeof role !== "string") {
    if (typeof type === "string" && RESPONSES_ITEMS.has(type)) {
      return "responses";
    }
    return { problem: "has no role, nor a Responses item type" };
  }
  if (!ROLES.has(role)) return { problem: "has a role no SDK sends" };
  if (type === "message") return "responses";
  if (fields.providerOptions !== undefined) return "ai-sdk";
  if (fields.tool_calls !== undefined || fields.tool_call_id !== undefined) {
    return "chat";
  }
  return contentShape(fields.content);
}

/** The shape a message's content parts name. */
function contentShape(content: unknown): MessageReading {
  if (typeof content === "string" || content === null) return "any";
  if (!Array.isArray(content)) {
    return { problem: "has content that is neither a string nor an array" };
  }
  let reading: MessageReading = "any";
  for (const part of content) {
    const type = typeof part === "object" && part !== null
      ? (part as Record<string, unknown>).type
      : undefined;
    if (typeof type !== "string") {
      return { problem: "has a content part without a type" };
    }
    const shape = partShape(type, part as Record<string, unknown>);
    if (shape === undefined) continue;
    if (reading !== "any" && reading !== shape) {
      return { problem: "mixes the content parts of two SDKs" };
    }
    reading = shape;
  }
  return reading;
}

function partShape(
  type: string,
  part: Record<string, unknown>,
): ConversationShape | undefined {
  if (RESPONSES_PARTS.has(type)) return "responses";
  if (AI_SDK_PARTS.has(type)) return "ai-sdk";
  if (CHAT_PARTS.has(type)) return "chat";
  // A file part is the AI SDK's with `data` and `mediaType`, chat's with `file`.
  if (type === "file") return "file" in part ? "chat" : "ai-sdk";
  // "text" is written alike by chat and the AI SDK.
  return undefined;
}
