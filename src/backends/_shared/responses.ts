/**
 * A Responses request as the chat request a chat template renders, for every
 * backend that counts through one.
 *
 * @module
 */
import type { JsonObject } from "../../core/backend.ts";
import { CountError } from "../../core/errors.ts";
import { effectiveField, isJsonObject } from "../../core/request.ts";

/**
 * Converts an OpenAI Responses request (`instructions` + `input`) into the
 * chat completions request a chat-template counter renders: instructions
 * become a system message, input items become messages, function calls and
 * their outputs become assistant `tool_calls` and `tool` messages, and
 * function tools take the chat shape. What has no chat form (built-in tools,
 * file inputs, item references, a structured `text.format`) throws a
 * {@linkcode CountError}, so the caller falls back to an estimate.
 * Reasoning items are dropped: chat templates do not render past reasoning.
 */
export function responsesToChat(request: JsonObject): JsonObject {
  const messages: JsonObject[] = [];
  const instructions = effectiveField(request, "instructions");
  if (typeof instructions === "string") {
    messages.push({ role: "system", content: instructions });
  }
  const input = effectiveField(request, "input");
  if (typeof input === "string") {
    messages.push({ role: "user", content: input });
  } else if (Array.isArray(input)) {
    for (const item of input) appendItem(messages, item);
  } else {throw new CountError(
      "Cannot count the Responses request as 'input' is missing",
    );}
  const chat: Record<string, unknown> = { messages };
  const model = effectiveField(request, "model");
  if (model !== undefined) chat.model = model;
  const tools = effectiveField(request, "tools");
  if (Array.isArray(tools)) chat.tools = tools.map(chatTool);
  const toolChoice = effectiveField(request, "tool_choice");
  if (toolChoice !== undefined) chat.tool_choice = chatToolChoice(toolChoice);
  const reasoning = effectiveField(request, "reasoning");
  if (isJsonObject(reasoning) && typeof reasoning.effort === "string") {
    chat.reasoning_effort = reasoning.effort;
  }
  const text = effectiveField(request, "text");
  if (
    isJsonObject(text) && isJsonObject(text.format) &&
    text.format.type !== "text"
  ) {
    throw new CountError(
      "Cannot count the Responses request as its text.format has no chat form",
    );
  }
  return chat;
}

function appendItem(messages: JsonObject[], item: unknown): void {
  if (!isJsonObject(item)) {
    throw new CountError(
      "Cannot count the Responses request as an input item is not an object",
    );
  }
  const type = item.type ?? "message";
  if (type === "message") {
    const role = item.role === "developer" ? "system" : item.role;
    messages.push({ role, content: chatContent(item.content) });
  } else if (type === "function_call") {
    const call = {
      id: item.call_id,
      type: "function",
      function: { name: item.name, arguments: item.arguments },
    };
    const last = messages[messages.length - 1];
    // Consecutive calls belong to one assistant turn, as in chat completions.
    if (
      last?.role === "assistant" && Array.isArray(last.tool_calls) &&
      last.content === null
    ) {
      (last.tool_calls as unknown[]).push(call);
    } else {messages.push({
        role: "assistant",
        content: null,
        tool_calls: [call],
      });}
  } else if (type === "function_call_output") {
    const output = typeof item.output === "string"
      ? item.output
      : JSON.stringify(item.output);
    messages.push({
      role: "tool",
      tool_call_id: item.call_id,
      content: output,
    });
  } else if (type !== "reasoning") {
    throw new CountError(
      `Cannot count the Responses request as input items of type ${
        safeName(type)
      } have no chat form`,
    );
  }
}

function chatContent(content: unknown): unknown {
  if (!Array.isArray(content)) return content;
  return content.map((part: unknown) => {
    if (!isJsonObject(part)) return part;
    switch (part.type) {
      case "input_text":
      case "output_text":
        return { type: "text", text: part.text };
      case "refusal":
        return { type: "text", text: part.refusal };
      case "input_image":
        return { type: "image_url", image_url: { url: part.image_url } };
      default:
        throw new CountError(
          `Cannot count the Responses request as content parts of type ${
            safeName(part.type)
          } have no chat form`,
        );
    }
  });
}

function chatTool(tool: unknown): JsonObject {
  if (!isJsonObject(tool) || tool.type !== "function") {
    throw new CountError(
      "Cannot count the Responses request as only function tools have a chat form",
    );
  }
  const fn: Record<string, unknown> = { name: tool.name };
  if (tool.description !== undefined) fn.description = tool.description;
  if (tool.parameters !== undefined) fn.parameters = tool.parameters;
  return { type: "function", function: fn };
}

function chatToolChoice(choice: unknown): unknown {
  if (isJsonObject(choice) && choice.type === "function") {
    return { type: "function", function: { name: choice.name } };
  }
  return choice;
}

/** A type tag fit for an error message: short identifiers only, never free text. */
function safeName(type: unknown): string {
  return typeof type === "string" && /^[a-z_]{1,40}$/.test(type)
    ? `'${type}'`
    : "unknown";
}
