/**
 * OpenAI Agents SDK input items as the chat messages its
 * `OpenAIChatCompletionsModel` sends (`@openai/agents-openai` 0.20's
 * `itemsToMessages`): user and system messages, an assistant message with
 * the function calls that follow it, one `tool` message per call result,
 * reasoning on the assistant message, each with the provider data it
 * carries (less the keys the message sets itself). Items that model sends
 * otherwise (media, hosted tools) are counted from a stand-in, and said so.
 *
 * @module
 */
import type { JsonObject } from "../../core/request.ts";
import type { Converted } from "../messages/ai_sdk.ts";

type Fields = Record<string, unknown>;

/** The chat messages `OpenAIChatCompletionsModel` sends for `items`. */
export function itemsToChat(items: readonly unknown[]): Converted {
  const out: JsonObject[] = [];
  const why = new Set<string>();
  let assistant: Fields | undefined;
  const flush = () => {
    if (assistant === undefined) return;
    const calls = assistant.tool_calls as unknown[] | undefined;
    if (calls !== undefined && calls.length === 0) delete assistant.tool_calls;
    out.push(assistant as JsonObject);
    assistant = undefined;
  };
  const pending = () =>
    assistant ??= { role: "assistant", content: null, tool_calls: [] };
  for (const item of items as readonly Fields[]) {
    const data = item.providerData;
    const type = item.type ?? (item.role === undefined ? undefined : "message");
    if (type === "message") {
      const calling = assistant?.content === null &&
        (assistant.tool_calls as unknown[] | undefined)?.length;
      if (item.role === "assistant") {
        const message = {
          role: "assistant",
          content: assistantContent(item.content, why),
          ...extra(data, ["role", "content", "tool_calls", "audio", "phase"]),
        };
        if (calling) Object.assign(assistant!, message);
        else {
          flush();
          assistant = message;
        }
        continue;
      }
      flush();
      out.push({
        role: item.role as string,
        content: item.role === "user"
          ? userContent(item.content, why)
          : item.content as string,
        ...extra(data, ["role", "content", "phase"]),
      });
    } else if (type === "function_call") {
      const message = pending();
      const fn = (data as Fields | undefined)?.function;
      (message.tool_calls as unknown[]).push({
        id: item.callId,
        type: "function",
        function: {
          name: item.name,
          arguments: item.arguments ?? "{}",
          ...extra(fn, ["name", "arguments"]),
        },
        ...extra(data, CALL_KEYS),
      });
      Object.assign(message, extra(data, CALL_KEYS));
    } else if (type === "function_call_result") {
      flush();
      out.push({
        role: "tool",
        tool_call_id: item.callId as string,
        content: toolOutput(item.output, why),
        ...extra(data, ["role", "tool_call_id", "content"]),
      });
    } else if (type === "reasoning") {
      if (assistant !== undefined && assistant.content !== null) flush();
      const raw = item.rawContent as { text?: unknown }[] | undefined;
      pending().reasoning = raw?.[0]?.text;
    } else {
      flush();
      why.add(`Agents SDK '${String(type)}' items are not counted`);
    }
  }
  flush();
  return why.size === 0
    ? { messages: out }
    : { messages: out, inexact: [...why].join("; ") };
}

/** The keys a function call's provider data may not set on the message or the call. */
const CALL_KEYS = [
  "id",
  "type",
  "function",
  "role",
  "content",
  "tool_calls",
  "audio",
];

/** Provider data the model spreads into what it sends, less `reserved` keys. */
function extra(data: unknown, reserved: readonly string[]): Fields {
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    return {};
  }
  return Object.fromEntries(
    Object.entries(data).filter(([key]) => !reserved.includes(key)),
  );
}

function userContent(content: unknown, why: Set<string>): unknown {
  if (!Array.isArray(content)) return content;
  return (content as Fields[]).flatMap((part): Fields[] => {
    if (part.type === "input_text") {
      return [{
        type: "text",
        text: part.text,
        ...(part.promptCacheBreakpoint
          ? { prompt_cache_breakpoint: part.promptCacheBreakpoint }
          : {}),
        ...extra(part.providerData, ["type", "text"]),
      }];
    }
    why.add("Agents SDK media inputs are counted from a stand-in");
    const url = typeof part.image === "string" ? part.image : "data:";
    return [{ type: "image_url", image_url: { url } }];
  });
}

function assistantContent(content: unknown, why: Set<string>): unknown {
  if (!Array.isArray(content)) return content;
  return (content as Fields[]).flatMap((part): Fields[] => {
    if (part.type === "output_text") {
      return [{
        type: "text",
        text: part.text,
        ...extra(part.providerData, ["type", "text"]),
      }];
    }
    if (part.type === "refusal") {
      return [{
        type: "refusal",
        refusal: part.refusal,
        ...extra(part.providerData, ["type", "refusal"]),
      }];
    }
    why.add("Agents SDK assistant media is not counted");
    return [];
  });
}

function toolOutput(output: unknown, why: Set<string>): string {
  if (typeof output === "string") return output;
  if (Array.isArray(output)) {
    return (output as Fields[])
      .filter((part) => part.type === "input_text")
      .map((part) => String(part.text))
      .join("");
  }
  const fields = (output ?? {}) as Fields;
  if (fields.type === "text" && typeof fields.text === "string") {
    return fields.text;
  }
  why.add("Agents SDK media tool outputs are counted from a stand-in");
  return "";
}

/** An agent's function tools as `OpenAIChatCompletionsModel` sends them. */
export function agentTools(agent: unknown): JsonObject[] | undefined {
  const tools = (agent as { tools?: unknown } | undefined)?.tools;
  if (!Array.isArray(tools)) return undefined;
  const functions = (tools as Fields[]).filter((tool) =>
    tool?.type === "function"
  );
  if (functions.length === 0) return undefined;
  return functions.map((tool) =>
    ({
      type: "function",
      function: {
        name: tool.name,
        description: tool.description || "",
        parameters: tool.parameters,
        strict: tool.strict,
      },
    }) as JsonObject
  );
}
