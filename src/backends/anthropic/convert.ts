/**
 * Converts a chat request to the body of Anthropic's
 * `POST /v1/messages/count_tokens`. OpenAI-shaped parts are converted;
 * parts already in the Messages shape pass unchanged, so an Anthropic
 * request counts as it is. What has no faithful Messages form throws a
 * CountError, so budget() falls back to an estimate rather than count
 * something else than what the provider will see.
 */
import type { JsonObject } from "../../core/backend.ts";
import { CountError } from "../../core/errors.ts";
import { effectiveField, isJsonObject } from "../../core/request.ts";

type Block = JsonObject;
interface Turn {
  role: "user" | "assistant";
  content: string | Block[];
}

/** Block types the Messages API defines; they pass through unchanged. */
const ANTHROPIC_BLOCKS: ReadonlySet<string> = new Set([
  "text",
  "image",
  "document",
  "tool_use",
  "tool_result",
  "thinking",
  "redacted_thinking",
  "search_result",
  "server_tool_use",
  "web_search_tool_result",
]);

/** `tool_choice` types of the Messages API; they pass through unchanged. */
const MESSAGES_CHOICES: ReadonlySet<string> = new Set([
  "auto",
  "any",
  "none",
  "tool",
]);

/** Image types the Messages API accepts in base64 sources. */
const IMAGE_TYPES: ReadonlySet<string> = new Set([
  "image/jpeg",
  "image/png",
  "image/gif",
  "image/webp",
]);

/**
 * The count_tokens body for `request`: `model` (the request's, else
 * `defaultModel`), `messages`, and `system`, `tools`, `tool_choice`,
 * `thinking` when present. Never mutates `request`.
 */
export function toAnthropicCount(
  request: JsonObject,
  defaultModel: string | undefined,
): JsonObject {
  const model = effectiveField(request, "model") ?? defaultModel;
  if (typeof model !== "string" || model === "") {
    throw new CountError(
      "Cannot count the request with Anthropic as it names no model",
    );
  }
  const rawMessages = effectiveField(request, "messages");
  if (!Array.isArray(rawMessages)) {
    throw new CountError(
      "Cannot count the request with Anthropic as 'messages' is not an array",
    );
  }
  const system: Block[] = systemBlocks(effectiveField(request, "system"));
  const turns: Turn[] = [];
  for (const message of rawMessages) appendMessage(turns, system, message);
  const body: Record<string, unknown> = { model, messages: turns };
  if (system.length > 0) body.system = system;
  const tools = effectiveField(request, "tools");
  if (Array.isArray(tools) && tools.length > 0) {
    body.tools = tools.map(anthropicTool);
    const choice = anthropicToolChoice(
      effectiveField(request, "tool_choice"),
      effectiveField(request, "parallel_tool_calls"),
    );
    if (choice !== undefined) body.tool_choice = choice;
  }
  const thinking = effectiveField(request, "thinking");
  // Only the Messages API's own `thinking` is sent: `reasoning_effort` has no
  // token budget to map to, and past thinking does not count as prompt.
  if (isJsonObject(thinking)) body.thinking = thinking;
  return body;
}

/** The top-level `system`: a string becomes one text block; blocks pass. */
function systemBlocks(system: unknown): Block[] {
  if (system === undefined || system === null) return [];
  if (typeof system === "string") return textBlocks(system);
  if (Array.isArray(system)) return system.map(textBlock);
  throw new CountError(
    "Cannot count the request with Anthropic as 'system' is not text",
  );
}

function appendMessage(turns: Turn[], system: Block[], message: unknown): void {
  if (!isJsonObject(message)) {
    throw new CountError(
      "Cannot count the request with Anthropic as a message is not an object",
    );
  }
  switch (message.role) {
    case "system":
    case "developer":
      // The Messages API has one system prompt: every system message joins it.
      system.push(...contentBlocks(message.content, textBlock));
      return;
    case "user":
      push(turns, "user", userContent(message.content));
      return;
    case "assistant":
      push(turns, "assistant", assistantContent(message));
      return;
    case "tool":
      push(turns, "user", [toolResult(message)]);
      return;
    default:
      throw new CountError(
        "Cannot count the request with Anthropic as a message role has no Messages form",
      );
  }
}

/**
 * Appends a turn, merging it into the previous one of the same role: the
 * Messages API wants user and assistant turns to alternate. Empty content
 * is dropped, as the API rejects empty text.
 */
function push(turns: Turn[], role: Turn["role"], content: string | Block[]) {
  if (content === "" || (Array.isArray(content) && content.length === 0)) {
    return;
  }
  const last = turns[turns.length - 1];
  if (last?.role !== role) {
    turns.push({ role, content });
    return;
  }
  last.content = [...asBlocks(last.content), ...asBlocks(content)];
}

function asBlocks(content: string | Block[]): Block[] {
  return typeof content === "string" ? textBlocks(content) : content;
}

function textBlocks(text: string): Block[] {
  return text === "" ? [] : [{ type: "text", text }];
}

function userContent(content: unknown): string | Block[] {
  if (typeof content === "string") return content;
  return contentBlocks(content, userBlock);
}

function contentBlocks(
  content: unknown,
  convert: (part: unknown) => Block,
): Block[] {
  if (content === undefined || content === null) return [];
  if (typeof content === "string") return textBlocks(content);
  if (!Array.isArray(content)) {
    throw new CountError(
      "Cannot count the request with Anthropic as a message's content is not text or parts",
    );
  }
  return content.map(convert).filter((block) =>
    !(block.type === "text" && block.text === "")
  );
}

function textBlock(part: unknown): Block {
  if (isJsonObject(part) && part.type === "text") return part;
  throw new CountError(
    "Cannot count the request with Anthropic as a system part is not text",
  );
}

function userBlock(part: unknown): Block {
  if (!isJsonObject(part)) {
    throw new CountError(
      "Cannot count the request with Anthropic as a content part is not an object",
    );
  }
  if (part.type === "image_url") return imageBlock(part.image_url);
  if (typeof part.type === "string" && ANTHROPIC_BLOCKS.has(part.type)) {
    return part;
  }
  throw new CountError(
    "Cannot count the request with Anthropic as a content part has no Messages form",
  );
}

/** A base64 data URL becomes a base64 image source; anything else falls back. */
function imageBlock(image: unknown): Block {
  const url = isJsonObject(image) ? image.url : image;
  const match = typeof url === "string"
    ? /^data:([a-z]+\/[a-z0-9.+-]+);base64,(.*)$/is.exec(url)
    : null;
  const mediaType = match?.[1]?.toLowerCase();
  if (
    match === null || mediaType === undefined || !IMAGE_TYPES.has(mediaType)
  ) {
    throw new CountError(
      "Cannot count the request with Anthropic as only base64 JPEG, PNG, GIF and WebP data URLs convert to image blocks",
    );
  }
  return {
    type: "image",
    source: { type: "base64", media_type: mediaType, data: match[2] },
  };
}

function assistantContent(message: JsonObject): string | Block[] {
  const calls = message.tool_calls;
  const hasCalls = Array.isArray(calls) && calls.length > 0;
  if (typeof message.content === "string" && !hasCalls) return message.content;
  const blocks = contentBlocks(message.content, assistantBlock);
  if (hasCalls) blocks.push(...calls.map(toolUse));
  return blocks;
}

function assistantBlock(part: unknown): Block {
  if (isJsonObject(part) && part.type === "refusal") {
    return { type: "text", text: part.refusal };
  }
  if (
    isJsonObject(part) && typeof part.type === "string" &&
    ANTHROPIC_BLOCKS.has(part.type)
  ) {
    return part;
  }
  throw new CountError(
    "Cannot count the request with Anthropic as an assistant part has no Messages form",
  );
}

/** An OpenAI tool call as a `tool_use` block; its arguments must be a JSON object. */
function toolUse(call: unknown): Block {
  const fn = isJsonObject(call) ? call.function : undefined;
  if (
    !isJsonObject(call) || !isJsonObject(fn) || typeof call.id !== "string" ||
    typeof fn.name !== "string"
  ) {
    throw new CountError(
      "Cannot count the request with Anthropic as a tool call lacks an id or a name",
    );
  }
  return { type: "tool_use", id: call.id, name: fn.name, input: toolInput(fn) };
}

function toolInput(fn: JsonObject): JsonObject {
  let input: unknown = fn.arguments ?? {};
  if (typeof input === "string") {
    try {
      input = input.trim() === "" ? {} : JSON.parse(input);
    } catch {
      input = undefined;
    }
  }
  if (!isJsonObject(input)) {
    throw new CountError(
      "Cannot count the request with Anthropic as tool call arguments are not a JSON object",
    );
  }
  return input;
}

function toolResult(message: JsonObject): Block {
  if (typeof message.tool_call_id !== "string") {
    throw new CountError(
      "Cannot count the request with Anthropic as a tool message lacks a tool_call_id",
    );
  }
  const { content } = message;
  const result: Record<string, unknown> = {
    type: "tool_result",
    tool_use_id: message.tool_call_id,
  };
  if (typeof content === "string") {
    if (content !== "") result.content = content;
  } else {
    const blocks = contentBlocks(content, userBlock);
    if (blocks.length > 0) result.content = blocks;
  }
  return result;
}

/** An OpenAI function tool as a Messages tool; Messages tools pass unchanged. */
function anthropicTool(tool: unknown): JsonObject {
  if (!isJsonObject(tool)) {
    throw new CountError(
      "Cannot count the request with Anthropic as a tool is not an object",
    );
  }
  if (tool.type !== "function") return tool;
  const fn = tool.function;
  if (!isJsonObject(fn) || typeof fn.name !== "string") {
    throw new CountError(
      "Cannot count the request with Anthropic as a function tool lacks a name",
    );
  }
  const converted: Record<string, unknown> = { name: fn.name };
  if (typeof fn.description === "string") {
    converted.description = fn.description;
  }
  converted.input_schema = isJsonObject(fn.parameters)
    ? fn.parameters
    : { type: "object", properties: {} };
  return converted;
}

/** OpenAI's `tool_choice` (and `parallel_tool_calls: false`) in the Messages form. */
function anthropicToolChoice(
  choice: unknown,
  parallel: unknown,
): JsonObject | undefined {
  let converted: Record<string, unknown> | undefined;
  if (choice === undefined || choice === null || choice === "auto") {
    converted = parallel === false ? { type: "auto" } : undefined;
  } else if (choice === "required") converted = { type: "any" };
  else if (choice === "none") converted = { type: "none" };
  else if (isJsonObject(choice) && choice.type === "function") {
    const fn = choice.function;
    if (!isJsonObject(fn) || typeof fn.name !== "string") {
      throw new CountError(
        "Cannot count the request with Anthropic as tool_choice names no function",
      );
    }
    converted = { type: "tool", name: fn.name };
  } else if (
    isJsonObject(choice) && MESSAGES_CHOICES.has(String(choice.type))
  ) {
    return choice;
  } else {
    throw new CountError(
      "Cannot count the request with Anthropic as its tool_choice has no Messages form",
    );
  }
  if (
    converted !== undefined && parallel === false && converted.type !== "none"
  ) {
    converted.disable_parallel_tool_use = true;
  }
  return converted;
}
