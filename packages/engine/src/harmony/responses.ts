/**
 * vLLM's Responses path for gpt-oss (`_make_request_with_harmony` of
 * `vllm/entrypoints/openai/responses/serving.py`, `response_input_to_harmony`
 * of `responses/harmony.py`, vLLM main of 2026-05-24): the first system
 * item's text as the identity; with function tools, a developer message
 * with them and `instructions` (dropped without); the input as a user
 * message, or item by item (a developer's text after `Instructions:\n`, an
 * assistant's on `final`, system items dropped, reasoning `content` on
 * `analysis`, function calls as on the chat path).
 *
 * @module
 */
import { EngineError, RequestRejectedError } from "../common/errors.ts";
import { isJsonObject, type JsonObject } from "../common/request.ts";
import type { HarmonyMessage, Role } from "./messages.ts";
import {
  type HarmonyPiece,
  type HarmonyRenderOptions,
  harmonySystem,
  MODEL_IDENTITY,
  renderForCompletion,
  toolDescription,
} from "./render.ts";
import type { ToolDescription } from "./schema.ts";

/** Options of {@linkcode renderHarmonyResponses}. */
export interface HarmonyResponsesOptions extends HarmonyRenderOptions {
  /**
   * vLLM's `VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS`: `instructions` join
   * the system message's identity instead of the developer message.
   *
   * @default {false}
   */
  readonly systemInstructions?: boolean;
}

const BUILT_IN = ["web_search_preview", "code_interpreter", "container", "mcp"];
const ROLES = ["user", "system", "developer", "assistant"];

function unsupported(what: string): EngineError {
  return new EngineError(`Cannot count the Responses request as ${what}`);
}

const isSet = (value: unknown) => value !== undefined && value !== null;

/**
 * Renders a Responses request's fields as vLLM's Responses path does for
 * gpt-oss, ending on `<|start|>assistant`.
 *
 * @param request The request's fields (`input`, `instructions`, `tools`, ...).
 * @param options The date; where `instructions` go.
 * @returns The pieces, in order.
 * @throws {RequestRejectedError} Where vLLM refuses the request.
 * @throws {EngineError} For what cannot be mirrored: `previous_response_id`
 * (the server stores that conversation), `previous_input_messages`,
 * built-in tools (the server's tool server describes them), non-text content.
 */
export function renderHarmonyResponses(
  request: unknown,
  options: HarmonyResponsesOptions,
): HarmonyPiece[] {
  if (!isJsonObject(request)) throw unsupported("its fields are missing");
  if (isSet(request.previous_response_id)) {
    throw unsupported(
      "previous_response_id continues a conversation the server stores",
    );
  }
  if (isSet(request.previous_input_messages)) {
    throw unsupported("previous_input_messages is not mirrored");
  }
  const { include, input, instructions, reasoning } = request;
  if (
    isSet(request.prompt) ||
    Array.isArray(include) && include.includes("message.output_text.logprobs")
  ) throw new RequestRejectedError();
  if (
    isSet(instructions) && typeof instructions !== "string" ||
    isSet(reasoning) && !isJsonObject(reasoning) ||
    typeof input !== "string" && !Array.isArray(input)
  ) throw new RequestRejectedError();
  // Unlike `None`, a missing field takes its default.
  const own = (key: string, fallback: unknown) =>
    Object.hasOwn(request, key) ? request[key] : fallback;
  const tools = functionTools(own("tools", []));
  const choice = own("tool_choice", "auto");
  if (choice !== "auto" && choice !== "none") throw new RequestRejectedError();
  const items = typeof input === "string"
    ? [{ role: "user", content: input }]
    : input as unknown[];
  let identity = systemText(items) ?? MODEL_IDENTITY;
  const asIdentity = typeof instructions === "string" &&
    options.systemInstructions === true;
  if (asIdentity) {
    identity = identity ? `${identity}\n${instructions}` : instructions;
  }
  const effort = isJsonObject(reasoning) ? reasoning.effort : undefined;
  const conversation: HarmonyMessage[] = [{
    role: "system",
    content: [harmonySystem(effort, options.date, identity)],
  }];
  if (tools.length > 0) {
    conversation.push({
      role: "developer",
      content: [{
        kind: "developer",
        ...(typeof instructions === "string" && !asIdentity
          ? { instructions }
          : {}),
        functionTools: tools,
      }],
    });
  }
  // A function output names the latest earlier call with its call_id.
  const calls = new Map<string, string>();
  for (const item of items) {
    const message = itemMessage(item, calls);
    if (message !== null && message.role !== "system") {
      conversation.push(message);
    }
  }
  return renderForCompletion(conversation);
}

/** The function tools; vLLM refuses other types, built-in ones aside. */
function functionTools(tools: unknown): ToolDescription[] {
  if (!Array.isArray(tools)) throw new RequestRejectedError();
  return tools.map((tool) => {
    const type = isJsonObject(tool) ? tool.type : undefined;
    if (type === "function") return toolDescription(tool);
    if (BUILT_IN.includes(type as string)) {
      throw unsupported("its built-in tools are described by the server");
    }
    throw new RequestRejectedError();
  });
}

/** `_extract_system_message_from_request`: `undefined` keeps the default. */
function systemText(input: readonly unknown[]): string | undefined {
  const message = input.find((item) =>
    isJsonObject(item) && item.role === "system"
  ) as JsonObject | undefined;
  const content = message?.content;
  const part = Array.isArray(content)
    ? content.find((part) => isJsonObject(part) && part.type === "input_text")
    : undefined;
  const text = typeof content === "string" ? content : part?.text;
  return text === undefined ? text : str(text);
}

/** A text where vLLM reads one (a part's `text`: images and refusals lack it). */
function str(value: unknown): string {
  if (typeof value !== "string") {
    throw unsupported("an input item lacks a text where vLLM reads one");
  }
  return value;
}

const partText = (part: unknown) =>
  str(isJsonObject(part) ? part.text : undefined);

/** `response_input_to_harmony`: `null` for empty reasoning. */
function itemMessage(
  item: unknown,
  calls: Map<string, string>,
): HarmonyMessage | null {
  if (!isJsonObject(item)) throw unsupported("an input item is not an object");
  const type = Object.hasOwn(item, "type") ? item.type : "message";
  if (type === "message") {
    const { role, content } = item;
    if (!ROLES.includes(role as string)) {
      throw unsupported("a message's role is not one of the Responses API's");
    }
    const prefix = role === "developer" ? "Instructions:\n" : "";
    const texts = Array.isArray(content)
      ? content.map(partText)
      : [str(content)];
    return {
      role: role as Role,
      ...(role === "assistant" ? { channel: "final" } : {}),
      content: texts.map((text) => prefix + text),
    };
  }
  if (type === "function_call") {
    const name = str(item.name);
    const message: HarmonyMessage = {
      role: "assistant",
      channel: "commentary",
      recipient: `functions.${name}`,
      contentType: "json",
      content: [str(item.arguments)],
    };
    calls.set(str(item.call_id), name);
    return message;
  }
  if (type === "function_call_output") {
    const name = calls.get(item.call_id as string);
    // vLLM: "No call message found".
    if (name === undefined) throw new RequestRejectedError();
    return {
      role: "tool",
      name: `functions.${name}`,
      channel: "commentary",
      recipient: "assistant",
      content: [str(item.output)],
    };
  }
  if (type === "reasoning") {
    if (!Array.isArray(item.summary)) {
      throw unsupported("a reasoning item has no summary list");
    }
    const content = item.content;
    if (!Array.isArray(content) || content.length === 0) return null;
    return {
      role: "assistant",
      channel: "analysis",
      content: [content.map(partText).join("\n")],
    };
  }
  // vLLM: "Unknown input type".
  throw new RequestRejectedError();
}
