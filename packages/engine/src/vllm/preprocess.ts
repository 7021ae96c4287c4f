/**
 * vLLM's message preprocessing, applied to a `/tokenize` chat payload before
 * the chat template renders it (vLLM `chat_utils.py`, by the rules of the
 * release mirrored): content parts joined or wrapped as the template
 * expects, tool-call arguments parsed, reasoning under both names, tools
 * reshaped, media refused. What vLLM or transformers refuses (an empty
 * conversation, tool-call arguments that are not JSON) is a
 * RequestRejectedError: the server would reject the request too.
 *
 * @module
 */
import { EngineError, RequestRejectedError } from "../common/errors.ts";
import { type VllmRules, vllmRules } from "./release.ts";
import { isJsonObject } from "../common/request.ts";
import {
  type ContentFormat,
  parseJsonLossless,
} from "../jinja/chat_template.ts";
import { isPySpace } from "../jinja/py.ts";

export {
  type ContentFormat,
  detectContentFormat,
} from "../jinja/chat_template.ts";

/** Content part types that carry media: never counted as text. */
const MEDIA_PARTS = new Set([
  "image_url",
  "image_embeds",
  "image_pil",
  "input_image",
  "input_audio",
  "audio_url",
  "audio_embeds",
  "video_url",
  "file",
]);

/** Options of {@linkcode templateContext}. */
export interface ContextOptions {
  /** The special-token variables (`bos_token`, ...). */
  readonly specialTokens: Readonly<Record<string, string>>;
  /** The template's content format. */
  readonly contentFormat: ContentFormat;
  /**
   * The rules of the vLLM release mirrored.
   *
   * @default {vllmRules()} the newest release whose rules are known
   */
  readonly rules?: VllmRules;
  /**
   * Where a message or tool object seen before gives its converted form
   * again instead of preprocessing it: `make` preprocesses. Only for
   * objects nobody changes between renders (the count core's own copies).
   */
  readonly reuse?: Reuse;
  /**
   * Converts the messages as a whole, given how to convert one: what the
   * template gets as `messages` (a render sharing its first messages with
   * an earlier one takes their converted forms at once).
   */
  readonly reuseMessages?: (
    raw: readonly unknown[],
    each: (message: unknown) => unknown,
  ) => unknown;
}

/** Gives the converted form of a message or tool: remembered, or from `make`. */
export type Reuse = (
  kind: "message" | "tool",
  raw: unknown,
  make: () => unknown,
) => unknown;

/** The template variables of a payload, and what continue_final_message trims to. */
export interface TemplateInput {
  /** The template variables. */
  readonly context: Record<string, unknown>;
  /** The preprocessed content of the last message, when continuing it. */
  readonly continueFrom?: unknown;
}

/**
 * Builds the template variables for a `/tokenize` chat payload as vLLM and
 * transformers do: the special tokens, then `chat_template_kwargs`, then
 * `messages`, `tools` (`null` when absent), `documents` and
 * `add_generation_prompt`.
 *
 * @param payload A payload from `buildTokenizePayload`.
 * @param options The special tokens and content format.
 * @returns The context.
 * @throws {RequestRejectedError} For an empty conversation, or tool-call
 * arguments that are not JSON: vLLM and transformers refuse those.
 * @throws {EngineError} For media parts, malformed messages or tools, or
 * `continue_final_message` with `add_generation_prompt`.
 */
export function templateContext(
  payload: Readonly<Record<string, unknown>>,
  options: ContextOptions,
): TemplateInput {
  const kwargs = payload.chat_template_kwargs ?? {};
  if (!isJsonObject(kwargs)) {
    throw new EngineError(
      "Cannot count the request as 'chat_template_kwargs' is not an object",
    );
  }
  const { reuse } = options;
  const how: How = {
    format: options.contentFormat,
    rules: options.rules ?? NEWEST_RULES,
  };
  const raw = payload.messages as unknown[];
  // transformers: "Cannot apply chat template to an empty conversation".
  if (raw.length === 0) throw rejected("the conversation is empty");
  const each = (message: unknown) =>
    reuse === undefined
      ? preprocessMessage(message, how)
      : reuse("message", message, () => preprocessMessage(message, how));
  const messages = options.reuseMessages?.(raw, each) ?? raw.map(each);
  const addGenerationPrompt = payload.add_generation_prompt;
  const context: Record<string, unknown> = {
    ...options.specialTokens,
    ...kwargs,
    messages,
    tools: reshapeTools(payload.tools, reuse),
    documents: kwargs.documents ?? null,
    add_generation_prompt: addGenerationPrompt,
  };
  if (!payload.continue_final_message) return { context };
  if (addGenerationPrompt) {
    throw new EngineError(
      "Cannot count the request as 'continue_final_message' and 'add_generation_prompt' are both set",
    );
  }
  const last = preprocessMessage(raw[raw.length - 1], how);
  return { context, continueFrom: last.content };
}

const NEWEST_RULES = vllmRules();

/** How messages are preprocessed: the template's content format and the release's rules. */
interface How {
  readonly format: ContentFormat;
  readonly rules: VllmRules;
}

/** The request is one vLLM would refuse; `why` names the rule, never the content. */
function rejected(why: string): RequestRejectedError {
  const error = new RequestRejectedError();
  error.message = `vLLM refuses this request (${why})`;
  return error;
}

function preprocessMessage(
  message: unknown,
  { format, rules }: How,
): Record<string, unknown> {
  if (!isJsonObject(message) || typeof message.role !== "string") {
    throw new EngineError("Cannot count the request as a message has no role");
  }
  const texts = contentTexts(message.content);
  const result: Record<string, unknown> = {
    role: message.role,
    // A tool result's text parts are one string for every template, from
    // the release that joins them.
    content:
      format === "openai" && !(message.role === "tool" && rules.joinToolContent)
        ? texts.map((text) => ({ type: "text", text }))
        : texts.join("\n"),
  };
  if (message.role === "assistant") {
    const calls = message.tool_calls;
    if (
      Array.isArray(calls) && (calls.length > 0 || !rules.dropEmptyToolCalls)
    ) {
      result.tool_calls = calls.map(parseToolCall);
    }
    const reasoning = reasoningOf(message, rules);
    if (reasoning !== undefined && reasoning !== null) {
      result.reasoning = reasoning;
      result.reasoning_content = reasoning;
    }
  } else if (message.role === "tool" && "tool_call_id" in message) {
    result.tool_call_id = message.tool_call_id;
  }
  if (typeof message.name === "string") result.name = message.name;
  return result;
}

/**
 * The reasoning that reaches the template: `reasoning` alone (an empty
 * string is a value), or Python's `reasoning or reasoning_content` (an empty
 * or missing `reasoning` falls through) in the releases before.
 */
function reasoningOf(
  message: Record<string, unknown>,
  rules: VllmRules,
): unknown {
  if (rules.reasoning === "reasoning") return message.reasoning;
  const reasoning = message.reasoning;
  return pyTruthy(reasoning) ? reasoning : message.reasoning_content;
}

/** Python's truth of a JSON value. */
function pyTruthy(value: unknown): boolean {
  if (value === undefined || value === null || value === false) return false;
  if (value === 0 || value === "") return false;
  if (Array.isArray(value)) return value.length > 0;
  if (isJsonObject(value)) return Object.keys(value).length > 0;
  return true;
}

function contentTexts(content: unknown): string[] {
  if (content === undefined || content === null) return [];
  if (typeof content === "string") return [content];
  if (!Array.isArray(content)) {
    throw new EngineError(
      "Cannot count the request as a message's content is not text or parts",
    );
  }
  return content.map((part: unknown) => {
    if (isJsonObject(part) && part.type === "text") {
      if (typeof part.text === "string") return part.text;
    } else if (isJsonObject(part) && MEDIA_PARTS.has(String(part.type))) {
      throw new EngineError(
        "Cannot count media content parts locally: images and audio expand on the server",
      );
    }
    throw new EngineError(
      "Cannot count the request as a content part is not a text part",
    );
  });
}

function parseToolCall(call: unknown): unknown {
  if (!isJsonObject(call) || !isJsonObject(call.function)) {
    throw new EngineError(
      "Cannot count the request as a tool call is malformed",
    );
  }
  const args = call.function.arguments;
  let parsed: unknown = args;
  // vLLM: an empty or missing `arguments` becomes {}; a string goes through
  // an unguarded json.loads, so text that is not JSON fails the request; a
  // parsed object or list stays. Anything else fails its validation.
  if (args === undefined || args === null || args === "") parsed = {};
  else if (typeof args === "string") {
    try {
      parsed = parseJsonLossless(args);
    } catch {
      throw rejected("tool-call arguments are not JSON");
    }
  } else if (typeof args !== "object") {
    throw rejected("tool-call arguments are not a string");
  }
  return { ...call, function: { ...call.function, arguments: parsed } };
}

function reshapeTools(tools: unknown, reuse: Reuse | undefined): unknown {
  if (tools === undefined || tools === null) return null;
  if (!Array.isArray(tools)) {
    throw new EngineError(
      "Cannot count the request as 'tools' is not an array",
    );
  }
  return tools.map((tool: unknown) =>
    reuse === undefined
      ? reshapeTool(tool)
      : reuse("tool", tool, () => reshapeTool(tool))
  );
}

function reshapeTool(tool: unknown): unknown {
  if (
    !isJsonObject(tool) || !isJsonObject(tool.function) ||
    typeof tool.function.name !== "string"
  ) {
    throw new EngineError("Cannot count the request as a tool is malformed");
  }
  const { name, description, parameters, ...rest } = tool.function;
  return {
    type: tool.type ?? "function",
    function: {
      name,
      description: description ?? null,
      parameters: parameters ?? null,
      ...rest,
    },
  };
}

/**
 * Cuts a rendered prompt after the final message's text, as transformers
 * does for `continue_final_message`.
 *
 * @param rendered The rendered prompt.
 * @param content The final message's preprocessed content.
 * @returns The prompt up to the end of the final message.
 * @throws {RequestRejectedError} When the final message has no text part,
 * or its text is not in the prompt: transformers refuses both.
 */
export function continueFinalMessage(
  rendered: string,
  content: unknown,
): string {
  let final: unknown = content;
  if (Array.isArray(content)) {
    final = [...content].reverse().find((part) =>
      isJsonObject(part) && "text" in part
    )?.text;
  }
  // transformers raises ValueError for both, which vLLM answers with a 400.
  if (typeof final !== "string") {
    throw rejected("the final message has no text to continue");
  }
  const stripped = pyStripSpace(final);
  const at = rendered.lastIndexOf(stripped);
  if (at < 0) {
    throw rejected("the final message does not appear in the rendered prompt");
  }
  const lstripped = final.slice(final.length - pyLstripLength(final));
  return rendered.slice(at, at + lstripped.length) === final
    ? rendered.slice(0, at + lstripped.length)
    : rendered.slice(0, at + stripped.length);
}

function pyLstripLength(text: string): number {
  let start = 0;
  while (start < text.length && isPySpace(text[start]!)) start++;
  return text.length - start;
}

function pyStripSpace(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && isPySpace(text[start]!)) start++;
  while (end > start && isPySpace(text[end - 1]!)) end--;
  return text.slice(start, end);
}
