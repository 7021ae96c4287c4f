/**
 * Builds the body of Gemini's `POST models/{model}:countTokens`: a
 * `generateContentRequest`, so that the system instruction and the tools
 * count too. Gemini-shaped requests (`contents`) pass as they are;
 * OpenAI-shaped chat requests are converted. What has no faithful Gemini
 * form throws a CountError, so budget() falls back to an estimate.
 */
import type { JsonObject } from "../../core/backend.ts";
import { CountError } from "../../core/errors.ts";
import { effectiveField, isJsonObject } from "../../core/request.ts";

type Part = JsonObject;
interface Content {
  role: "user" | "model";
  parts: Part[];
}

/** True for a request in Gemini's own shape: a `contents` array. */
export function isGeminiShape(request: JsonObject): boolean {
  return Array.isArray(request.contents);
}

/** The generationConfig object's key in a Gemini request, and its cap's key. */
export function geminiCapKeys(
  request: JsonObject,
): { readonly config: string; readonly cap: string } {
  return !Object.hasOwn(request, "generationConfig") &&
      isJsonObject(request.generation_config)
    ? { config: "generation_config", cap: "max_output_tokens" }
    : { config: "generationConfig", cap: "maxOutputTokens" };
}

/**
 * The model's name: the request's model (else `defaultModel`), without a
 * leading `models/`. Names holding `/`, `\`, `..` or nothing are refused:
 * they would leave the model's path segment.
 */
export function geminiModelName(
  request: JsonObject,
  defaultModel: string | undefined,
): string {
  const model = effectiveField(request, "model") ?? defaultModel;
  if (typeof model !== "string") {
    throw new CountError(
      "Cannot count the request with Gemini as it names no model",
    );
  }
  const name = model.startsWith("models/") ? model.slice(7) : model;
  if (name === "" || /[/\\]/.test(name) || name.includes("..")) {
    throw new CountError(
      "Cannot count the request with Gemini as its model name is not a single path segment",
    );
  }
  return name;
}

/**
 * The countTokens body for `request` (Gemini or OpenAI chat shape) and a
 * model name from {@linkcode geminiModelName}, never mutating `request`.
 */
export function toGeminiCount(request: JsonObject, model: string): JsonObject {
  const inner: Record<string, unknown> = { model: `models/${model}` };
  Object.assign(
    inner,
    isGeminiShape(request) ? geminiFields(request) : convertChat(request),
  );
  return { generateContentRequest: inner };
}

/** The counted fields of a Gemini request, camelCased; the output cap is left out (it does not count). */
function geminiFields(request: JsonObject): Record<string, unknown> {
  const fields: Record<string, unknown> = { contents: request.contents };
  const pick = (camel: string, snake: string): unknown =>
    Object.hasOwn(request, camel) ? request[camel] : request[snake];
  const system = pick("systemInstruction", "system_instruction");
  if (system !== undefined) fields.systemInstruction = system;
  const tools = pick("tools", "tools");
  if (tools !== undefined) fields.tools = tools;
  const toolConfig = pick("toolConfig", "tool_config");
  if (toolConfig !== undefined) fields.toolConfig = toolConfig;
  // Cached content is part of the prompt: countTokens counts it with it.
  const cached = pick("cachedContent", "cached_content");
  if (cached !== undefined) fields.cachedContent = cached;
  const config = pick("generationConfig", "generation_config");
  if (isJsonObject(config)) {
    const rest = Object.fromEntries(
      Object.entries(config).filter(([key]) =>
        key !== "maxOutputTokens" && key !== "max_output_tokens"
      ),
    );
    if (Object.keys(rest).length > 0) fields.generationConfig = rest;
  }
  return fields;
}

function convertChat(request: JsonObject): Record<string, unknown> {
  const messages = effectiveField(request, "messages");
  if (!Array.isArray(messages)) {
    throw new CountError(
      "Cannot count the request with Gemini as 'messages' is not an array",
    );
  }
  const system: Part[] = [];
  const contents: Content[] = [];
  const callNames = new Map<string, string>();
  for (const message of messages) {
    appendMessage({ contents, system, callNames }, message);
  }
  const fields: Record<string, unknown> = { contents };
  if (system.length > 0) fields.systemInstruction = { parts: system };
  const tools = effectiveField(request, "tools");
  if (Array.isArray(tools) && tools.length > 0) {
    fields.tools = [{ functionDeclarations: tools.map(declaration) }];
    const config = toolConfig(effectiveField(request, "tool_choice"));
    if (config !== undefined) fields.toolConfig = config;
  }
  return fields;
}

interface Conversion {
  readonly contents: Content[];
  readonly system: Part[];
  /** Tool call ids to function names: Gemini's responses name the function. */
  readonly callNames: Map<string, string>;
}

function appendMessage(into: Conversion, message: unknown): void {
  if (!isJsonObject(message)) {
    throw new CountError(
      "Cannot count the request with Gemini as a message is not an object",
    );
  }
  switch (message.role) {
    case "system":
    case "developer":
      into.system.push(...textParts(message.content));
      return;
    case "user":
      push(into.contents, "user", userParts(message.content));
      return;
    case "assistant":
      push(into.contents, "model", modelParts(message, into.callNames));
      return;
    case "tool":
      push(into.contents, "user", [functionResponse(message, into.callNames)]);
      return;
    default:
      throw new CountError(
        "Cannot count the request with Gemini as a message role has no Gemini form",
      );
  }
}

/** Appends a turn, merging it into the previous one of the same role (parallel call results share a turn). */
function push(contents: Content[], role: Content["role"], parts: Part[]): void {
  if (parts.length === 0) return;
  const last = contents[contents.length - 1];
  if (last?.role === role) last.parts.push(...parts);
  else contents.push({ role, parts });
}

function textParts(content: unknown): Part[] {
  return partsOf(content, (part) => {
    if (isJsonObject(part) && part.type === "text") return { text: part.text };
    if (isJsonObject(part) && part.type === "refusal") {
      return { text: part.refusal };
    }
    throw new CountError(
      "Cannot count the request with Gemini as a content part is not text",
    );
  });
}

function partsOf(
  content: unknown,
  convert: (part: unknown) => Part,
): Part[] {
  if (content === undefined || content === null) return [];
  if (typeof content === "string") {
    return content === "" ? [] : [{ text: content }];
  }
  if (!Array.isArray(content)) {
    throw new CountError(
      "Cannot count the request with Gemini as a message's content is not text or parts",
    );
  }
  return content.map(convert).filter((part) => part.text !== "");
}

function userParts(content: unknown): Part[] {
  return partsOf(content, (part) => {
    if (isJsonObject(part) && part.type === "image_url") {
      return inlineImage(part.image_url);
    }
    return textParts([part])[0] ?? { text: "" };
  });
}

/** A base64 data URL becomes inline data; a remote URL has no mime type to give, so it falls back. */
function inlineImage(image: unknown): Part {
  const url = isJsonObject(image) ? image.url : image;
  const match = typeof url === "string"
    ? /^data:([a-z]+\/[a-z0-9.+-]+);base64,(.*)$/is.exec(url)
    : null;
  if (match === null) {
    throw new CountError(
      "Cannot count the request with Gemini as only base64 data URLs convert to inline images",
    );
  }
  return {
    inlineData: { mimeType: match[1]?.toLowerCase(), data: match[2] },
  };
}

function modelParts(message: JsonObject, names: Map<string, string>): Part[] {
  const parts = textParts(message.content);
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  for (const call of calls) {
    const fn = isJsonObject(call) ? call.function : undefined;
    if (!isJsonObject(fn) || typeof fn.name !== "string") {
      throw new CountError(
        "Cannot count the request with Gemini as a tool call lacks a name",
      );
    }
    if (isJsonObject(call) && typeof call.id === "string") {
      names.set(call.id, fn.name);
    }
    parts.push({ functionCall: { name: fn.name, args: callArgs(fn) } });
  }
  return parts;
}

function callArgs(fn: JsonObject): JsonObject {
  let args: unknown = fn.arguments ?? {};
  if (typeof args === "string") {
    try {
      args = args.trim() === "" ? {} : JSON.parse(args);
    } catch {
      args = undefined;
    }
  }
  if (!isJsonObject(args)) {
    throw new CountError(
      "Cannot count the request with Gemini as tool call arguments are not a JSON object",
    );
  }
  return args;
}

/** A tool message as a functionResponse naming the function its call named. */
function functionResponse(
  message: JsonObject,
  names: Map<string, string>,
): Part {
  const id = message.tool_call_id;
  const name = typeof id === "string" ? names.get(id) : undefined;
  if (name === undefined) {
    throw new CountError(
      "Cannot count the request with Gemini as a tool message answers no earlier tool call",
    );
  }
  const text = typeof message.content === "string"
    ? message.content
    : textParts(message.content).map((part) => part.text).join("\n");
  return { functionResponse: { name, response: responseObject(text) } };
}

/** A JSON object result stays itself; any other text is wrapped, as the response must be an object. */
function responseObject(text: string): JsonObject {
  try {
    const parsed: unknown = JSON.parse(text);
    if (isJsonObject(parsed)) return parsed;
  } catch {
    // Plain text: wrapped below.
  }
  return { content: text };
}

function declaration(tool: unknown): JsonObject {
  const fn = isJsonObject(tool) && tool.type === "function"
    ? tool.function
    : undefined;
  if (!isJsonObject(fn) || typeof fn.name !== "string") {
    throw new CountError(
      "Cannot count the request with Gemini as only named function tools convert to declarations",
    );
  }
  const converted: Record<string, unknown> = { name: fn.name };
  if (typeof fn.description === "string") {
    converted.description = fn.description;
  }
  // OpenAI parameters are full JSON Schema, which only parametersJsonSchema takes as is.
  if (isJsonObject(fn.parameters)) {
    converted.parametersJsonSchema = fn.parameters;
  }
  return converted;
}

function toolConfig(choice: unknown): JsonObject | undefined {
  if (choice === undefined || choice === null) return undefined;
  const modes: Record<string, string> = {
    auto: "AUTO",
    required: "ANY",
    none: "NONE",
  };
  if (typeof choice === "string" && modes[choice] !== undefined) {
    return { functionCallingConfig: { mode: modes[choice] } };
  }
  const fn = isJsonObject(choice) && choice.type === "function"
    ? choice.function
    : undefined;
  if (isJsonObject(fn) && typeof fn.name === "string") {
    return {
      functionCallingConfig: { mode: "ANY", allowedFunctionNames: [fn.name] },
    };
  }
  throw new CountError(
    "Cannot count the request with Gemini as its tool_choice has no Gemini form",
  );
}
