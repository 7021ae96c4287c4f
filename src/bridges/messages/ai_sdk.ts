/**
 * AI SDK `ModelMessage`s as the chat messages its OpenAI-compatible
 * provider sends: `ai` 7's `convertToLanguageModelMessage` (empty text
 * parts dropped, a lone user text part sent as a string) followed by
 * `@ai-sdk/openai-compatible` 3's `convertToOpenAICompatibleChatMessages`
 * (assistant text joined, reasoning as `reasoning_content`, tool calls with
 * their arguments as JSON, one `tool` message per tool result). Parts the
 * provider sends as media are counted from a stand-in, and said so.
 *
 * @module
 */
import type { JsonObject } from "../../core/request.ts";

/** Chat messages, and why they are not exactly what the SDK sends, when not. */
export interface Converted {
  readonly messages: JsonObject[];
  readonly inexact?: string;
}

type Fields = Record<string, unknown>;

/** What the provider sends for AI SDK `ModelMessage`s. */
export function aiSdkToChat(messages: readonly unknown[]): Converted {
  const out: JsonObject[] = [];
  const media = { seen: false };
  for (const message of messages as readonly Fields[]) {
    const extra = metadata(message);
    switch (message.role) {
      case "system":
        out.push({ role: "system", content: message.content, ...extra });
        break;
      case "user":
        out.push(user(message, extra, media));
        break;
      case "assistant":
        out.push(assistant(message.content, extra));
        break;
      case "tool":
        out.push(...toolResults(message.content));
        break;
      default:
        // Roles the AI SDK has not (developer, function) go as they are.
        out.push({ ...message } as JsonObject);
    }
  }
  return media.seen
    ? {
      messages: out,
      inexact:
        "AI SDK image and file parts are counted from their URL or a stand-in, not from the media the provider sends",
    }
    : { messages: out };
}

/** `providerOptions.openaiCompatible`, which the provider spreads into the message. */
function metadata(fields: Fields): Fields {
  const options = fields.providerOptions;
  const own = typeof options === "object" && options !== null
    ? (options as Fields).openaiCompatible
    : undefined;
  return typeof own === "object" && own !== null ? own as Fields : {};
}

function user(
  message: Fields,
  extra: Fields,
  media: { seen: boolean },
): JsonObject {
  const { content } = message;
  if (!Array.isArray(content)) return { role: "user", content, ...extra };
  const parts = (content as Fields[]).filter((part) =>
    part.type !== "text" || part.text !== ""
  );
  if (parts.length === 1 && parts[0]!.type === "text") {
    return { role: "user", content: parts[0]!.text, ...metadata(parts[0]!) };
  }
  return {
    role: "user",
    content: parts.map((part) => {
      if (part.type === "text") {
        return { type: "text", text: part.text, ...metadata(part) };
      }
      media.seen = true;
      const source = part.type === "image" ? part.image : part.data;
      const url = typeof source === "string" || source instanceof URL
        ? String(source)
        : "data:";
      return { type: "image_url", image_url: { url } };
    }),
    ...extra,
  };
}

function assistant(content: unknown, extra: Fields): JsonObject {
  if (!Array.isArray(content)) {
    return { role: "assistant", content, ...extra };
  }
  let text = "";
  let reasoning = "";
  const calls: JsonObject[] = [];
  for (const part of content as Fields[]) {
    if (part.type === "text") text += String(part.text);
    else if (part.type === "reasoning") reasoning += String(part.text);
    else if (part.type === "tool-call") {
      calls.push({
        id: part.toolCallId,
        type: "function",
        function: { name: part.toolName, arguments: toolArguments(part.input) },
        ...metadata(part),
      });
    }
  }
  return {
    role: "assistant",
    content: calls.length > 0 ? text || null : text,
    ...(reasoning.length > 0 ? { reasoning_content: reasoning } : {}),
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
    ...extra,
  };
}

/** A string input that is JSON goes as it is; anything else as JSON. */
function toolArguments(input: unknown): string {
  if (typeof input === "string") {
    try {
      JSON.parse(input);
      return input;
    } catch {
      return JSON.stringify(input);
    }
  }
  return stringify(input);
}

function toolResults(content: unknown): JsonObject[] {
  if (!Array.isArray(content)) return [];
  return (content as Fields[])
    .filter((part) => part.type === "tool-result")
    .map((part) => ({
      role: "tool",
      tool_call_id: part.toolCallId,
      content: resultText(part.output),
      ...metadata(part),
    }));
}

function resultText(output: unknown): string {
  const { type, value, reason } = (output ?? {}) as Fields;
  switch (type) {
    case "text":
    case "error-text":
      return String(value);
    case "execution-denied":
      return typeof reason === "string"
        ? reason
        : "Tool call execution denied.";
    default:
      // json, error-json, and content (the provider sends it as JSON).
      return stringify(value);
  }
}

/** JSON as the SDK writes it: bigints as strings, a cycle as "[Circular]". */
function stringify(value: unknown): string {
  const ancestors: unknown[] = [];
  return JSON.stringify(
    value,
    function (this: unknown, _key: string, item: unknown) {
      if (typeof item === "bigint") return item.toString();
      if (typeof item !== "object" || item === null) return item;
      while (ancestors.length > 0 && ancestors.at(-1) !== this) {
        ancestors.pop();
      }
      if (ancestors.includes(item)) return "[Circular]";
      ancestors.push(item);
      return item;
    },
  ) ?? "";
}
