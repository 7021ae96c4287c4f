/**
 * vLLM's Responses path for gpt-oss (`_make_request_with_harmony` and
 * `_construct_input_messages_with_harmony` of
 * `vllm/entrypoints/openai/responses/serving.py`, `response_input_to_harmony`
 * of `responses/harmony.py`, vLLM main of 2026-05-24): a system message
 * whose identity is the first system input message's text; with function
 * tools, a developer message with `instructions` and the tools (without
 * them `instructions` are not rendered; under
 * `VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS` they join the identity
 * instead); then the input: a string as a user message, or each item:
 * a message with its role (a developer's text after `Instructions:\n`, an
 * assistant's on the `final` channel, a system one dropped), a reasoning
 * item's `content` on `analysis` (its summary is not read), a function call
 * and its output as on the chat path. Rendered as the chat path renders.
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

/** Tools the server's tool server (or its MCP labels) describes. */
const BUILT_IN = ["web_search_preview", "code_interpreter", "container", "mcp"];
const ROLES = ["user", "system", "developer", "assistant"];

function unsupported(what: string): EngineError {
  return new EngineError(`Cannot count the Responses request as ${what}`);
}

const isSet = (value: unknown) => value !== undefined && value !== null;

/**
 * Renders a Responses request as vLLM's Responses path renders it for
 * gpt-oss, ending on `<|start|>assistant`.
 *
 * @param request The request's fields (`input`, `instructions`, `tools`,
 * `tool_choice`, `reasoning`, `include`, `previous_response_id`, ...).
 * @param options The conversation's start date; where `instructions` go.
 * @returns The pieces, in order.
 * @throws {RequestRejectedError} Where vLLM refuses the request: a
 * `tool_choice` other than `auto` or `none`, an effort Harmony lacks,
 * output logprobs, a function output without its call, an unknown item.
 * @throws {EngineError} For what cannot be mirrored: `previous_response_id`
 * (the conversation is stored by the server), `previous_input_messages`,
 * built-in tools (described by the server's tool server), content that is
 * not text.
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
  let identity = typeof input === "string" ? undefined : systemText(input);
  if (typeof instructions === "string" && options.systemInstructions) {
    identity = identity === ""
      ? instructions
      : `${
        identity ?? "You are ChatGPT, a large language model trained by OpenAI."
      }\n${instructions}`;
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
        ...(typeof instructions === "string" && !options.systemInstructions
          ? { instructions }
          : {}),
        functionTools: tools,
      }],
    });
  }
  if (typeof input === "string") {
    conversation.push({ role: "user", content: [input] });
    return renderForCompletion(conversation);
  }
  // A function output names the latest earlier call with its call_id.
  const calls = new Map<string, string>();
  for (const item of input) {
    const message = itemMessage(item, calls);
    if (message !== null && message.role !== "system") {
      conversation.push(message);
    }
  }
  return renderForCompletion(conversation);
}

/** The function tools; built-in ones cannot be mirrored, other types vLLM refuses. */
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

/**
 * `_extract_system_message_from_request`: the first system message's text,
 * or its first `input_text` part's; `undefined` keeps the default identity.
 */
function systemText(input: readonly unknown[]): string | undefined {
  const message = input.find((item) =>
    isJsonObject(item) && item.role === "system"
  ) as JsonObject | undefined;
  const content = message?.content;
  const part = Array.isArray(content)
    ? content.find((part) => isJsonObject(part) && part.type === "input_text")
    : undefined;
  const text = typeof content === "string" ? content : part?.text;
  if (text !== undefined && typeof text !== "string") {
    throw unsupported("a system message's text is not a string");
  }
  return text;
}

function str(value: unknown, what: string): string {
  if (typeof value !== "string") throw unsupported(`${what} is not a string`);
  return value;
}

/** A part's `text`: parts without one (images, files, refusals) fail vLLM's conversion. */
function partText(part: unknown): string {
  if (!isJsonObject(part)) throw unsupported("a content part is not text");
  return str(part.text, "a content part's text");
}

/** `response_input_to_harmony`: one input item, or `null` for empty reasoning. */
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
    let contents: string[];
    if (typeof content === "string") contents = [prefix + content];
    else if (Array.isArray(content)) {
      contents = content.map((part) => prefix + partText(part));
    } else throw unsupported("a message's content is neither text nor parts");
    return {
      role: role as Role,
      ...(role === "assistant" ? { channel: "final" } : {}),
      content: contents,
    };
  }
  if (type === "function_call") {
    const name = str(item.name, "a function call's name");
    const message: HarmonyMessage = {
      role: "assistant",
      channel: "commentary",
      recipient: `functions.${name}`,
      contentType: "json",
      content: [str(item.arguments, "a function call's arguments")],
    };
    calls.set(str(item.call_id, "a function call's call_id"), name);
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
      content: [str(item.output, "a function call's output")],
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
