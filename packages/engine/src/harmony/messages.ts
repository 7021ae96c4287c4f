/**
 * vLLM's conversion of a chat completion's messages to Harmony messages
 * (`parse_chat_inputs_to_harmony_messages` and
 * `parse_chat_input_to_harmony_message` in
 * `vllm/entrypoints/openai/parser/harmony_utils.py`, vLLM main of
 * 2026-05-24): an assistant's `reasoning` becomes an `analysis` message
 * (`reasoning_content` is not read), its tool calls commentary messages to
 * `functions.NAME` of content type `json`, its content the `final`
 * channel (or commentary beside tool calls); a tool result comes from
 * `functions.NAME` (the name found by `tool_call_id`) to the assistant; any
 * other message keeps its role and text parts. Then the analysis before
 * the last final answer is dropped (`auto_drop_analysis_messages`).
 *
 * @module
 */
import { EngineError } from "../common/errors.ts";
import { isJsonObject, type JsonObject } from "../common/request.ts";
import type { ToolDescription } from "./schema.ts";

/** Harmony's roles. */
export type Role = "system" | "developer" | "user" | "assistant" | "tool";

/** `SystemContent` as vLLM's `get_system_message` fills it for the chat path. */
export interface SystemContent {
  readonly kind: "system";
  readonly modelIdentity: string;
  readonly reasoningEffort: "low" | "medium" | "high";
  readonly conversationStartDate: string;
  readonly knowledgeCutoff: string;
  readonly validChannels: readonly string[];
}

/** `DeveloperContent`: instructions (Responses only), the function tools (or none). */
export interface DeveloperContent {
  readonly kind: "developer";
  readonly instructions?: string;
  readonly functionTools: readonly ToolDescription[] | null;
}

/** One content of a message: text, or the system or developer content. */
export type Content = string | SystemContent | DeveloperContent;

/** A Harmony `Message`. */
export interface HarmonyMessage {
  readonly role: Role;
  /** The author's name: a tool's `functions.NAME`. */
  readonly name?: string;
  readonly recipient?: string;
  readonly channel?: string;
  readonly contentType?: string;
  readonly content: readonly Content[];
}

const ROLES: readonly string[] = ["system", "developer", "user"];

/** Python's truthiness of a JSON value. */
function truthy(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  if (isJsonObject(value)) return Object.keys(value).length > 0;
  return value !== undefined && value !== null && value !== false &&
    value !== 0 && value !== "";
}

/** Python's `dict.get(key, fallback)`. */
function get(object: JsonObject, key: string, fallback?: unknown): unknown {
  return Object.hasOwn(object, key) ? object[key] : fallback;
}

function unsupported(what: string): EngineError {
  return new EngineError(
    `Cannot count the request through Harmony as ${what}`,
  );
}

function text(value: unknown, what: string): string {
  if (typeof value !== "string") throw unsupported(`${what} is not a string`);
  return value;
}

/**
 * `flatten_chat_text_content`: a list's `text` parts joined, a string as it is.
 */
function flatten(content: unknown): string | null {
  if (Array.isArray(content)) {
    return content.filter((part) => isJsonObject(part) && part.type === "text")
      .map((part) => text(get(part as JsonObject, "text", ""), "a text part"))
      .join("");
  }
  if (content === undefined || content === null) return null;
  return text(content, "a message's content");
}

/**
 * Converts a chat request's messages to Harmony messages as vLLM's chat
 * path does, analysis before the last final answer dropped.
 *
 * @param messages The request's `messages`.
 * @returns The Harmony messages, in order.
 * @throws {EngineError} For a message vLLM fails or that cannot be
 * mirrored (a role Harmony lacks, content that is not text, malformed tool
 * calls).
 */
export function harmonyMessages(
  messages: readonly unknown[],
): HarmonyMessage[] {
  const toolNames = new Map<unknown, unknown>();
  for (const message of messages) {
    if (!isJsonObject(message)) throw unsupported("a message is not an object");
    for (const call of toolCalls(message)) {
      const fn = get(call, "function", {});
      toolNames.set(
        get(call, "id", null),
        isJsonObject(fn) ? get(fn, "name", null) : null,
      );
    }
  }
  const out: HarmonyMessage[] = [];
  for (const message of messages as JsonObject[]) {
    out.push(...harmonyMessage(message, toolNames));
  }
  return dropAnalysis(out);
}

function toolCalls(message: JsonObject): JsonObject[] {
  const calls = get(message, "tool_calls", []);
  if (!Array.isArray(calls) || !calls.every(isJsonObject)) {
    throw unsupported("a message's tool_calls is not a list of objects");
  }
  return calls;
}

/** `name` as Python's f-string writes it: `None` for a missing one. */
function pyName(name: unknown): string {
  if (name === null || name === undefined) return "None";
  return text(name, "a tool call's name");
}

function harmonyMessage(
  message: JsonObject,
  toolNames: ReadonlyMap<unknown, unknown>,
): HarmonyMessage[] {
  const role = get(message, "role");
  const out: HarmonyMessage[] = [];
  const calls = toolCalls(message);
  if (role === "assistant" && calls.length > 0) {
    const content = flatten(get(message, "content"));
    if (truthy(content)) {
      out.push({
        role: "assistant",
        channel: "commentary",
        content: [content!],
      });
    }
    out.push(...analysis(message));
    for (const call of calls) {
      const fn = get(call, "function", {});
      if (!isJsonObject(fn)) throw unsupported("a tool call has no function");
      const args = get(fn, "arguments", "");
      out.push({
        role: "assistant",
        channel: "commentary",
        recipient: `functions.${pyName(get(fn, "name", ""))}`,
        contentType: "json",
        content: [truthy(args) ? text(args, "a tool call's arguments") : ""],
      });
    }
    return out;
  }
  if (role === "tool") {
    const id = get(message, "tool_call_id", "");
    const name = toolNames.has(id) ? toolNames.get(id) : "";
    const content = get(message, "content", "");
    return [{
      role: "tool",
      name: `functions.${pyName(name)}`,
      channel: "commentary",
      recipient: "assistant",
      content: [flatten(truthy(content) ? content : "") ?? ""],
    }];
  }
  if (role === "assistant") out.push(...analysis(message));
  const content = get(message, "content");
  let contents: string[];
  if (!truthy(content)) contents = [""];
  else if (typeof content === "string") contents = [content];
  else if (Array.isArray(content) && content.every(isJsonObject)) {
    contents = content.map((part) => text(get(part, "text", ""), "a part"));
  } else throw unsupported("a message's content is neither text nor parts");
  if (role === "assistant") {
    // Only the first part decides whether the answer is kept.
    if (contents[0] !== "") {
      out.push({ role: "assistant", channel: "final", content: contents });
    }
  } else if (typeof role === "string" && ROLES.includes(role)) {
    out.push({ role: role as Role, content: contents });
  } else throw unsupported("a message's role is not one of Harmony's");
  return out;
}

/** An assistant's `reasoning`, sent back: the `analysis` channel. */
function analysis(message: JsonObject): HarmonyMessage[] {
  const reasoning = get(message, "reasoning");
  if (!truthy(reasoning)) return [];
  return [{
    role: "assistant",
    channel: "analysis",
    content: [text(reasoning, "an assistant's reasoning")],
  }];
}

/**
 * vLLM's `auto_drop_analysis_messages`: analysis messages before the last
 * assistant message on the final channel go.
 */
function dropAnalysis(messages: HarmonyMessage[]): HarmonyMessage[] {
  const last = messages.findLastIndex((message) =>
    message.role === "assistant" && message.channel === "final"
  );
  return messages.filter((message, index) =>
    !(index < last && message.channel === "analysis")
  );
}
