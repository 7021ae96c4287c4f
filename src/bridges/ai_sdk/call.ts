/**
 * An AI SDK language-model call as the chat completions request its
 * OpenAI-compatible provider sends (`@ai-sdk/openai-compatible` 3): the
 * prompt's messages, the function tools with their JSON schema, the tool
 * choice, a JSON response format, and the output cap as `max_tokens`.
 *
 * @module
 */
import type { JsonObject } from "../../core/request.ts";
import { aiSdkToChat } from "../messages/ai_sdk.ts";
import type { ModelCallParams } from "./types.ts";

type Fields = Record<string, unknown>;

/** The chat request a call sends, and why it is not exactly that, when not. */
export interface CallRequest {
  readonly request: JsonObject;
  readonly inexact?: string;
}

/** The chat request the provider sends for `params`. */
export function callRequest(
  params: ModelCallParams,
  model: string,
): CallRequest {
  const converted = aiSdkToChat(params.prompt);
  const tools = chatTools(params.tools);
  const choice = toolChoice(params.toolChoice);
  const request: Record<string, unknown> = {
    model,
    messages: converted.messages,
  };
  if (params.maxOutputTokens !== undefined) {
    request.max_tokens = params.maxOutputTokens;
  }
  if (tools !== undefined) request.tools = tools;
  if (choice !== undefined) request.tool_choice = choice;
  // Only its presence matters to a count: /tokenize cannot mirror it.
  if (params.responseFormat?.type === "json") {
    request.response_format = { type: "json_object" };
  }
  return converted.inexact === undefined
    ? { request: request as JsonObject }
    : { request: request as JsonObject, inexact: converted.inexact };
}

/** The function tools as chat tools; provider tools are not sent. */
export function chatTools(
  tools: readonly unknown[] | undefined,
): JsonObject[] | undefined {
  const functions = (tools ?? []).filter((tool): tool is Fields =>
    typeof tool === "object" && tool !== null &&
    (tool as Fields).type === "function"
  );
  if (functions.length === 0) return undefined;
  return functions.map((tool) =>
    ({
      type: "function",
      function: {
        name: tool.name,
        description: tool.description,
        parameters: tool.inputSchema,
        ...(tool.strict != null ? { strict: tool.strict } : {}),
      },
    }) as JsonObject
  );
}

function toolChoice(
  choice: ModelCallParams["toolChoice"],
): string | JsonObject | undefined {
  switch (choice?.type) {
    case "auto":
    case "none":
    case "required":
      return choice.type;
    case "tool":
      return { type: "function", function: { name: choice.toolName } };
    default:
      return undefined;
  }
}
