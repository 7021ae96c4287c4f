/**
 * What vLLM's DeepSeek V3.2 and V4 encoders share
 * (`vllm/tokenizers/deepseek_v32_encoding.py`, `deepseek_v4_encoding.py`):
 * the special tokens, tool calls written as DSML, and the Python semantics
 * their `str.format` and `json.dumps` calls have.
 *
 * @module
 */
import { RequestRejectedError } from "../common/errors.ts";
import { isJsonObject } from "../common/request.ts";
import { parseJsonLossless } from "../jinja/json.ts";
import { PyFloat, pyJsonDumps, pyStr, toValue } from "../jinja/values.ts";

/** The encoders' BOS token, written first whatever the tokenizer's is. */
export const BOS = "<｜begin▁of▁sentence｜>";
/** Ends every assistant message. */
export const EOS = "<｜end▁of▁sentence｜>";
/** Opens a thinking block. */
export const THINK_START = "<think>";
/** Closes a thinking block; alone, it says the turn does not think. */
export const THINK_END = "</think>";
/** The marker of the DSML tags tool calls are written in. */
export const DSML = "｜DSML｜";
/** Opens a user turn. */
export const USER = "<｜User｜>";
/** Opens an assistant turn. */
export const ASSISTANT = "<｜Assistant｜>";

/** A message of the conversation, after vLLM's preprocessing. */
export type Message = Readonly<Record<string, unknown>>;

/**
 * The request makes vLLM's encoder raise, so the server refuses it. `why`
 * names the rule, never the content.
 */
export function refuse(why: string): RequestRejectedError {
  const error = new RequestRejectedError();
  error.message = `vLLM refuses this request (${why})`;
  return error;
}

/** Python's `dict.get(key)`: `null` (None) for a missing key. */
export function get(message: Message, key: string): unknown {
  return Object.hasOwn(message, key) ? message[key] : null;
}

/** Python's truth of a JSON value (as `json.loads` or a request gives it). */
export function pyTruthy(value: unknown): boolean {
  if (value === undefined || value === null || value === false) return false;
  if (value === 0 || value === "" || value === 0n) return false;
  if (value instanceof PyFloat) return value.value !== 0;
  if (Array.isArray(value)) return value.length > 0;
  if (value instanceof Map) return value.size > 0;
  if (typeof value === "object") return Object.keys(value).length > 0;
  return true;
}

/** Python's `str()` of a value, as `str.format` writes it. */
export function pyFormat(value: unknown): string {
  return pyStr(toValue(value ?? null));
}

const DUMPS = {
  indent: null,
  separators: null,
  sortKeys: false,
  ensureAscii: false,
} as const;

/** The encoders' `to_json`: `json.dumps(value, ensure_ascii=False)`. */
export function toJson(value: unknown): string {
  return pyJsonDumps(toValue(value ?? null), DUMPS);
}

/** The index of the last user or developer message, or -1. */
export function lastUserIndex(messages: readonly Message[]): number {
  for (let index = messages.length - 1; index >= 0; index--) {
    const role = get(messages[index]!, "role");
    if (role === "user" || role === "developer") return index;
  }
  return -1;
}

/** The encoders' `tools_from_openai_format`: each tool's `function`. */
export function toolFunctions(tools: unknown): unknown[] {
  if (!Array.isArray(tools)) throw refuse("tools is not a list");
  return tools.map((tool) => {
    if (!isJsonObject(tool) || !Object.hasOwn(tool, "function")) {
      throw refuse("a tool has no function");
    }
    return tool.function;
  });
}

/** The tool schemas, one JSON line each, as the encoders' `render_tools` lists them. */
export function toolSchemas(tools: unknown): string {
  return toolFunctions(tools).map(toJson).join("\n");
}

/**
 * An assistant's tool calls as a DSML block named `block`, after the
 * `\n\n` that opens it; `""` when there are none.
 */
export function dsmlToolCalls(calls: unknown, block: string): string {
  if (!pyTruthy(calls)) return "";
  if (!Array.isArray(calls)) throw refuse("tool_calls is not a list");
  const invokes = calls.map((call) => {
    const fn = isJsonObject(call) ? call.function : undefined;
    if (!isJsonObject(fn) || !Object.hasOwn(fn, "name")) {
      throw refuse("a tool call has no function name");
    }
    if (!Object.hasOwn(fn, "arguments")) {
      throw refuse("a tool call has no arguments");
    }
    return `<${DSML}invoke name="${pyFormat(fn.name)}">\n${
      dsmlArguments(fn.arguments)
    }\n</${DSML}invoke>`;
  });
  return `\n\n<${DSML}${block}>\n${invokes.join("\n")}\n</${DSML}${block}>`;
}

/** `encode_arguments_to_dsml`: one parameter line per argument. */
function dsmlArguments(raw: unknown): string {
  let args = raw;
  if (typeof args === "string") {
    try {
      args = parseJsonLossless(args);
    } catch {
      throw refuse("tool-call arguments are not JSON");
    }
  }
  let entries: [string, unknown][];
  if (args instanceof Map) entries = [...args];
  else if (isJsonObject(args)) entries = Object.entries(args);
  else throw refuse("tool-call arguments are not an object");
  return entries.map(([key, value]) => {
    const text = typeof value === "string";
    return `<${DSML}parameter name="${key}" string="${text}">${
      text ? value : toJson(value)
    }</${DSML}parameter>`;
  }).join("\n");
}
