/**
 * The built-in rough token estimator, following Hermes Agent's rules
 * (2026-09): used only when the exact count fails.
 *
 * @module
 */
import type { JsonObject } from "./backend.ts";
import { effectiveField, isJsonObject } from "./request.ts";

/**
 * Tokens {@linkcode roughEstimate} charges for each image part, whatever its
 * size, as Hermes Agent does.
 *
 * @example Two images in one message
 * ```ts
 * import { IMAGE_TOKENS, roughEstimate } from "@incontext/incontext";
 * import { strictEqual } from "node:assert/strict";
 *
 * const image = { type: "image_url", image_url: { url: "data:," } };
 * const request = { messages: [{ role: "user", content: [image, image] }] };
 * strictEqual(roughEstimate(request), 2 * IMAGE_TOKENS);
 * ```
 */
export const IMAGE_TOKENS = 1500;

/** A rough estimator: returns an approximate prompt token count for a request. */
export type Estimator = (request: JsonObject) => number;

// U+1100-11FF, U+2E80-9FFF, U+A960-A97F, U+AC00-D7AF, U+F900-FAFF, U+FF00-FFEF count one token each.
const CJK =
  /[\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]/g;
const NON_ASCII = /[\u0080-\uffff]/;
const encoder = new TextEncoder();

/**
 * Estimates the tokens of a text: all-ASCII text counts ceil(chars / 4);
 * otherwise each CJK code point is one token and the rest counts
 * ceil(UTF-8 bytes / 4).
 *
 * @param text The text to estimate.
 * @returns The estimated token count.
 *
 * @example ASCII and CJK
 * ```ts
 * import { estimateTextTokens } from "@incontext/incontext";
 * import { strictEqual } from "node:assert/strict";
 *
 * strictEqual(estimateTextTokens("hello world"), 3);
 * strictEqual(estimateTextTokens("你好 world"), 2 + 2);
 * ```
 */
export function estimateTextTokens(text: string): number {
  if (!NON_ASCII.test(text)) return Math.ceil(text.length / 4);
  let cjk = 0;
  const rest = text.replace(CJK, () => {
    cjk += 1;
    return "";
  });
  return cjk + Math.ceil(encoder.encode(rest).length / 4);
}

/**
 * Estimates a request's prompt tokens without a tokenizer: the text of every
 * message (content, text parts, reasoning, tool calls), a completion's
 * `prompt`, a Responses request's `instructions` and `input` items, 1500 per
 * image part, and each tool's name + description + compact JSON of its
 * parameters. `extra_body` values win over top-level ones, as the OpenAI SDKs
 * merge them. Anthropic Messages requests (top-level `system`, `tool_use`,
 * `tool_result` and `thinking` blocks, `input_schema`) and Gemini requests
 * (`contents[].parts[]`, `systemInstruction`, `functionDeclarations`) are
 * read the same way.
 *
 * @param request A chat completions, completions, Responses, Anthropic
 * Messages or Gemini request body.
 * @returns The estimated prompt token count (0 for a request with no text).
 *
 * @example Estimating a short chat
 * ```ts
 * import { roughEstimate } from "@incontext/incontext";
 * import { strictEqual } from "node:assert/strict";
 *
 * const request = {
 *   messages: [
 *     { role: "user", content: "What is the capital of France?" },
 *     { role: "user", content: [{ type: "image_url", image_url: { url: "data:," } }] },
 *   ],
 * };
 * strictEqual(roughEstimate(request), 8 + 1500);
 * strictEqual(roughEstimate({ prompt: "Once upon a time" }), 4);
 * strictEqual(roughEstimate({ instructions: "Be brief.", input: "Hello there" }), 5);
 * strictEqual(roughEstimate({ system: "Be brief.", messages: [] }), 3);
 * strictEqual(roughEstimate({ contents: [{ role: "user", parts: [{ text: "Hello there" }] }] }), 3);
 * ```
 */
export function roughEstimate(request: JsonObject): number {
  const texts: string[] = [];
  let images = 0;
  for (const field of ["messages", "input"]) {
    const items = effectiveField(request, field);
    if (typeof items === "string") texts.push(items);
    else if (Array.isArray(items)) {
      for (const item of items) images += collectMessage(item, texts);
    }
  }
  for (const field of ["prompt", "instructions"]) {
    const text = effectiveField(request, field);
    if (typeof text === "string") texts.push(text);
  }
  const tools = effectiveField(request, "tools");
  if (Array.isArray(tools)) {
    for (const tool of tools) collectTool(tool, texts);
  }
  images += collectSystem(effectiveField(request, "system"), texts);
  images += collectGemini(request, texts);
  return estimateTextTokens(texts.join("")) + images * IMAGE_TOKENS;
}

/** Anthropic's top-level `system`: a string or text blocks. */
function collectSystem(system: unknown, texts: string[]): number {
  if (typeof system === "string") texts.push(system);
  else if (Array.isArray(system)) return collectParts(system, texts);
  return 0;
}

/** Gemini's `systemInstruction` and `contents` (either spelling), part by part. */
function collectGemini(request: JsonObject, texts: string[]): number {
  let images = 0;
  const system = request.systemInstruction ?? request.system_instruction;
  if (typeof system === "string") texts.push(system);
  else if (isJsonObject(system)) images += collectGeminiParts(system, texts);
  const { contents } = request;
  if (Array.isArray(contents)) {
    for (const content of contents) {
      images += collectGeminiParts(content, texts);
    }
  }
  return images;
}

function collectGeminiParts(content: unknown, texts: string[]): number {
  if (!isJsonObject(content) || !Array.isArray(content.parts)) return 0;
  let images = 0;
  for (const part of content.parts) {
    if (!isJsonObject(part)) continue;
    if (typeof part.text === "string") texts.push(part.text);
    if (isJsonObject(part.inlineData ?? part.inline_data)) images += 1;
    for (const key of ["functionCall", "function_call"]) {
      collectNamed(part[key], "args", texts);
    }
    for (const key of ["functionResponse", "function_response"]) {
      collectNamed(part[key], "response", texts);
    }
  }
  return images;
}

/** A call or result's name and the compact JSON of its `field`. */
function collectNamed(value: unknown, field: string, texts: string[]): void {
  if (!isJsonObject(value)) return;
  if (typeof value.name === "string") texts.push(value.name);
  if (value[field] !== undefined) {
    texts.push(JSON.stringify(value[field]) ?? "");
  }
}

function collectMessage(message: unknown, texts: string[]): number {
  if (!isJsonObject(message)) return 0;
  let images = 0;
  const { content } = message;
  if (typeof content === "string") texts.push(content);
  else if (Array.isArray(content)) images += collectParts(content, texts);
  for (const key of ["reasoning", "reasoning_content"]) {
    const value = message[key];
    if (typeof value === "string") texts.push(value);
  }
  // Responses input items carry calls and results at the top level.
  for (const key of ["name", "arguments", "output"]) {
    const value = message[key];
    if (typeof value === "string" && message.type !== undefined) {
      texts.push(value);
    }
  }
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls) {
      if (!isJsonObject(call) || !isJsonObject(call.function)) continue;
      const { name, arguments: args } = call.function;
      if (typeof name === "string") texts.push(name);
      if (typeof args === "string") texts.push(args);
      else if (args !== undefined) texts.push(JSON.stringify(args) ?? "");
    }
  }
  return images;
}

/** Content parts: text, images, and Anthropic's tool_use, tool_result and thinking blocks. */
function collectParts(parts: readonly unknown[], texts: string[]): number {
  let images = 0;
  for (const part of parts) {
    if (!isJsonObject(part)) continue;
    if (typeof part.text === "string") texts.push(part.text);
    else if (isImagePart(part)) images += 1;
    else if (part.type === "tool_use") collectNamed(part, "input", texts);
    else if (part.type === "thinking" && typeof part.thinking === "string") {
      texts.push(part.thinking);
    } else if (part.type === "tool_result") {
      const { content } = part;
      if (typeof content === "string") texts.push(content);
      else if (Array.isArray(content)) images += collectParts(content, texts);
    }
  }
  return images;
}

function isImagePart(part: JsonObject): boolean {
  return part.type === "image_url" || part.type === "input_image" ||
    part.type === "image";
}

function collectTool(tool: unknown, texts: string[]): void {
  if (!isJsonObject(tool)) return;
  const declarations = tool.functionDeclarations ?? tool.function_declarations;
  if (Array.isArray(declarations)) {
    for (const declaration of declarations) collectTool(declaration, texts);
    return;
  }
  const fn = isJsonObject(tool.function) ? tool.function : tool;
  if (typeof fn.name === "string") texts.push(fn.name);
  if (typeof fn.description === "string") texts.push(fn.description);
  // OpenAI `parameters`, Anthropic `input_schema`, Gemini `parametersJsonSchema`.
  const schema = fn.parameters !== undefined
    ? fn.parameters
    : fn.input_schema ?? fn.parametersJsonSchema ?? fn.parameters_json_schema;
  if (schema !== undefined) texts.push(JSON.stringify(schema) ?? "");
}
