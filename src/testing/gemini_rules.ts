/**
 * The request rules of Gemini's `POST models/{model}:countTokens`, as the
 * fake enforces them, and the fake's deterministic count. Each rule returns
 * the message the real API answers with a 400 `INVALID_ARGUMENT`. Field
 * names are accepted camelCased or snake_cased, as the API's JSON mapping does.
 */
import { isJsonObject as isObject } from "../core/request.ts";

type Obj = { readonly [key: string]: unknown };

/** The field under either spelling, camelCase first. */
function field(object: Obj, camel: string): unknown {
  if (Object.hasOwn(object, camel)) return object[camel];
  return object[camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)];
}

/** The first key outside `allowed` (given camelCased), for "Unknown name" errors. */
function unknownName(
  object: Obj,
  allowed: readonly string[],
): string | undefined {
  const camel = (key: string) =>
    key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
  return Object.keys(object).find((key) => !allowed.includes(camel(key)));
}

function unknown(name: string, at: string): string {
  return `Invalid JSON payload received. Unknown name "${name}" at '${at}': Cannot find field.`;
}

const REQUEST_FIELDS = [
  "model",
  "contents",
  "systemInstruction",
  "tools",
  "toolConfig",
  "generationConfig",
  "safetySettings",
  "cachedContent",
];
const PART_DATA = [
  "text",
  "inlineData",
  "fileData",
  "functionCall",
  "functionResponse",
  "executableCode",
  "codeExecutionResult",
];
const PART_FIELDS = [
  ...PART_DATA,
  "thought",
  "thoughtSignature",
  "videoMetadata",
];
const TOOL_FIELDS = [
  "functionDeclarations",
  "googleSearch",
  "googleSearchRetrieval",
  "codeExecution",
  "urlContext",
];
const DECLARATION_FIELDS = [
  "name",
  "description",
  "parameters",
  "parametersJsonSchema",
  "response",
  "responseJsonSchema",
  "behavior",
];
const MODES = ["MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED"];

/** Why the real API would reject `body` with a 400, or `undefined` when it accepts it. */
export function geminiRequestProblem(body: unknown): string | undefined {
  if (!isObject(body)) return "Invalid JSON payload received.";
  const extra = unknownName(body, ["contents", "generateContentRequest"]);
  if (extra !== undefined) return unknown(extra, "");
  const inner = field(body, "generateContentRequest");
  const contents = field(body, "contents");
  if (inner !== undefined && contents !== undefined) {
    return "* CountTokensRequest: contents and generate_content_request cannot both be set.";
  }
  if (inner === undefined) return contentsProblem(contents, "contents");
  return innerProblem(inner);
}

function innerProblem(inner: unknown): string | undefined {
  const at = "generate_content_request";
  if (!isObject(inner)) return `Invalid value at '${at}': not an object`;
  const extra = unknownName(inner, REQUEST_FIELDS);
  if (extra !== undefined) return unknown(extra, at);
  const model = inner.model;
  if (typeof model !== "string" || !/^models\/[^/]+$/.test(model)) {
    return "* GenerateContentRequest.model: unexpected model name format";
  }
  return contentsProblem(inner.contents, `${at}.contents`) ??
    systemProblem(field(inner, "systemInstruction")) ??
    toolsProblem(inner.tools) ??
    toolConfigProblem(field(inner, "toolConfig")) ??
    generationConfigProblem(field(inner, "generationConfig"));
}

function contentsProblem(contents: unknown, at: string): string | undefined {
  if (!Array.isArray(contents) || contents.length === 0) {
    return "* GenerateContentRequest.contents: contents is not specified";
  }
  let previous: unknown;
  for (const [index, content] of contents.entries()) {
    if (!isObject(content)) return `Invalid value at '${at}[${index}]'`;
    const extra = unknownName(content, ["role", "parts"]);
    if (extra !== undefined) return unknown(extra, `${at}[${index}]`);
    const role = content.role ?? "user";
    if (role !== "user" && role !== "model") {
      return "Please use a valid role: user, model.";
    }
    if (role === previous) {
      return "Please ensure that multiturn requests alternate between user and model.";
    }
    previous = role;
    const problem = partsProblem(content.parts, `${at}[${index}].parts`);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function partsProblem(parts: unknown, at: string): string | undefined {
  if (!Array.isArray(parts) || parts.length === 0) {
    return "* GenerateContentRequest.contents.parts: contents.parts must not be empty.";
  }
  for (const [index, part] of parts.entries()) {
    const here = `${at}[${index}]`;
    if (!isObject(part)) return `Invalid value at '${here}'`;
    const extra = unknownName(part, PART_FIELDS);
    if (extra !== undefined) return unknown(extra, here);
    const data = PART_DATA.filter((name) => field(part, name) !== undefined);
    if (data.length !== 1) {
      return `* GenerateContentRequest.contents.parts: a part must hold exactly one of ${
        PART_DATA.join(", ")
      }`;
    }
    const problem = dataProblem(part, here);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function dataProblem(part: Obj, at: string): string | undefined {
  const text = part.text;
  if (text !== undefined && typeof text !== "string") {
    return `Invalid value at '${at}.text' (TYPE_STRING)`;
  }
  const inline = field(part, "inlineData");
  if (
    inline !== undefined &&
    !(isObject(inline) && typeof field(inline, "mimeType") === "string" &&
      typeof inline.data === "string")
  ) return `* ${at}.inline_data: mime_type and data are required`;
  const call = field(part, "functionCall");
  if (
    call !== undefined &&
    !(isObject(call) && typeof call.name === "string" &&
      (call.args === undefined || isObject(call.args)))
  ) return `* ${at}.function_call.name: Name cannot be empty.`;
  const response = field(part, "functionResponse");
  if (
    response !== undefined &&
    !(isObject(response) && typeof response.name === "string" &&
      isObject(response.response))
  ) {
    return `* ${at}.function_response: name and response (an object) are required.`;
  }
  return undefined;
}

function systemProblem(system: unknown): string | undefined {
  if (system === undefined) return undefined;
  if (!isObject(system)) {
    return "Invalid value at 'generate_content_request.system_instruction'";
  }
  const extra = unknownName(system, ["role", "parts"]);
  if (extra !== undefined) {
    return unknown(extra, "generate_content_request.system_instruction");
  }
  return partsProblem(
    system.parts,
    "generate_content_request.system_instruction.parts",
  );
}

function toolsProblem(tools: unknown): string | undefined {
  if (tools === undefined) return undefined;
  if (!Array.isArray(tools)) {
    return "Invalid value at 'generate_content_request.tools'";
  }
  for (const [index, tool] of tools.entries()) {
    const at = `generate_content_request.tools[${index}]`;
    if (!isObject(tool)) return `Invalid value at '${at}'`;
    const extra = unknownName(tool, TOOL_FIELDS);
    if (extra !== undefined) return unknown(extra, at);
    const declarations = field(tool, "functionDeclarations") ?? [];
    if (!Array.isArray(declarations)) return `Invalid value at '${at}'`;
    for (const declaration of declarations) {
      const problem = declarationProblem(declaration, at);
      if (problem !== undefined) return problem;
    }
  }
  return undefined;
}

function declarationProblem(
  declaration: unknown,
  at: string,
): string | undefined {
  const here = `${at}.function_declarations`;
  if (!isObject(declaration)) return `Invalid value at '${here}'`;
  const extra = unknownName(declaration, DECLARATION_FIELDS);
  if (extra !== undefined) return unknown(extra, here);
  const { name } = declaration;
  if (
    typeof name !== "string" || !/^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$/.test(name)
  ) {
    return `* ${here}.name: Invalid function name. Must start with a letter or an underscore.`;
  }
  if (
    field(declaration, "parameters") !== undefined &&
    field(declaration, "parametersJsonSchema") !== undefined
  ) {
    return `* ${here}: parameters and parameters_json_schema cannot both be set.`;
  }
  return undefined;
}

function toolConfigProblem(config: unknown): string | undefined {
  if (config === undefined) return undefined;
  const calling = isObject(config)
    ? field(config, "functionCallingConfig")
    : undefined;
  if (!isObject(calling)) {
    return "Invalid value at 'generate_content_request.tool_config'";
  }
  const mode = calling.mode;
  return mode === undefined || MODES.includes(String(mode))
    ? undefined
    : `Invalid value at 'generate_content_request.tool_config.function_calling_config.mode' (type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), "${
      String(mode)
    }"`;
}

function generationConfigProblem(config: unknown): string | undefined {
  if (config === undefined) return undefined;
  if (!isObject(config)) {
    return "Invalid value at 'generate_content_request.generation_config'";
  }
  const cap = field(config, "maxOutputTokens");
  return cap === undefined || Number.isSafeInteger(cap)
    ? undefined
    : "Invalid value at 'generate_content_request.generation_config.max_output_tokens' (TYPE_INT32)";
}

/** Tokens the fake charges per inline image, as Gemini charges small images. */
export const FAKE_GEMINI_IMAGE_TOKENS = 258;

/**
 * The fake's count of a valid body: ceil(characters / 4) of its rendered
 * text (system instruction, each turn's role and parts: text, function
 * calls and responses as JSON, tool declarations as JSON), plus 3 per turn
 * and {@linkcode FAKE_GEMINI_IMAGE_TOKENS} per inline image.
 * Deterministic and content-sensitive, not Gemini's tokenizer.
 */
export function fakeGeminiCount(body: Obj): number {
  const inner = field(body, "generateContentRequest");
  const request: Obj = isObject(inner) ? inner : body;
  const texts: string[] = [];
  let images = 0;
  const collect = (parts: unknown): void => {
    if (!Array.isArray(parts)) return;
    for (const part of parts) {
      if (!isObject(part)) continue;
      if (typeof part.text === "string") texts.push(part.text);
      if (field(part, "inlineData") !== undefined) images += 1;
      for (const name of ["functionCall", "functionResponse"]) {
        const value = field(part, name);
        if (value !== undefined) texts.push(JSON.stringify(value));
      }
    }
  };
  const system = field(request, "systemInstruction");
  if (isObject(system)) collect(system.parts);
  const contents = Array.isArray(request.contents) ? request.contents : [];
  for (const content of contents) {
    if (!isObject(content)) continue;
    texts.push(String(content.role ?? "user"));
    collect(content.parts);
  }
  if (Array.isArray(request.tools)) texts.push(JSON.stringify(request.tools));
  const chars = texts.join("\n").length;
  return Math.ceil(chars / 4) + 3 * contents.length +
    FAKE_GEMINI_IMAGE_TOKENS * images;
}
