/**
 * A local estimate of a Chat Completions prompt for OpenAI models: OpenAI
 * has no count endpoint for this shape, so the text is counted with the
 * model's encoding (gpt-tokenizer) and OpenAI's documented per-message
 * overhead is added. The result is an estimate, and labelled one.
 *
 * The formula is the OpenAI cookbook's ("How to count tokens with
 * tiktoken", whose figures it checked against the API: 124 and 129 prompt
 * tokens for its sample conversation with gpt-4o and gpt-4, 101 and 105 with
 * its sample tool): 3 tokens per message plus the tokens of each of its
 * string fields (role, content, name, tool_call_id, ...), 1 more for a
 * `name`, and 3 to prime the reply. Tools follow the cookbook's
 * `num_tokens_for_tools`: per function 7 tokens (10 for cl100k models) plus
 * `name:description`; per top-level property 3 plus `name:type:description`
 * (3 more before the first, and per enum value 3 plus the value, less 3 per
 * enum), and 12 to end the list. What the cookbook leaves open is a rougher
 * approximation: nested properties count only through their parent's line,
 * a tool call counts its name and arguments plus 3, `tool_choice` and
 * `response_format` count nothing. Media parts fail the count.
 */
import { getLogger } from "@logtape/logtape";
import type { JsonObject } from "../../core/backend.ts";
import { CountError } from "../../core/errors.ts";
import { errorType, safeCause } from "../../core/error_type.ts";
import { effectiveField, isJsonObject } from "../../core/request.ts";

/**
 * The npm package the encodings come from, at the version `deno.json` pins.
 * The npm tarball declares it an optional peer, which npm does not install:
 * only this estimate needs its 27 MB, so a user of the `openai` backend
 * installs it, and a missing one is named with this.
 */
export const GPT_TOKENIZER = "gpt-tokenizer@4.0.0";

const logger = getLogger(["incontext", "openai"]);

/** The encodings the estimate supports. */
export type OpenAIEncodingName = "o200k_base" | "cl100k_base";

/** Counts plain text (special-token text counts as text, as the API treats it). */
export type TextCounter = (text: string) => number;

/** What the estimate needs of gpt-tokenizer, loaded on the first count. */
export interface OpenAIEncoding {
  readonly name: OpenAIEncodingName;
  readonly count: TextCounter;
}

const O200K =
  /^(?:gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|chatgpt-4o|o1|o3|o4|codex-mini)(?:$|[-.:])/;
const CL100K = /^(?:gpt-4|gpt-3\.5)(?:$|[-.:])/;

/**
 * The encoding of an OpenAI model name (an `openai/` prefix, as gateways
 * write it, is ignored), or `undefined` for a model it does not know.
 */
export function encodingForModel(
  model: unknown,
): OpenAIEncodingName | undefined {
  if (typeof model !== "string") return undefined;
  const name = model.startsWith("openai/") ? model.slice(7) : model;
  if (O200K.test(name)) return "o200k_base";
  if (CL100K.test(name)) return "cl100k_base";
  return undefined;
}

const loading = new Map<OpenAIEncodingName, Promise<OpenAIEncoding>>();

/**
 * Loads an encoding once per process. The ranks are megabytes of
 * JavaScript, so they are imported only when a chat request first needs
 * them (literal specifiers, so bundlers and Deno's graph see them).
 *
 * @throws {CountError} Naming {@linkcode GPT_TOKENIZER} and how to install
 * it, when the package cannot be imported.
 */
export function loadEncoding(
  name: OpenAIEncodingName,
): Promise<OpenAIEncoding> {
  let promise = loading.get(name);
  if (promise === undefined) {
    promise = importEncoding(name);
    // A failed import is retried by the next count.
    promise.catch(() => loading.delete(name));
    loading.set(name, promise);
  }
  return promise;
}

/** Whether the missing package was logged: once per process is enough. */
let warned = false;

async function importEncoding(
  name: OpenAIEncodingName,
): Promise<OpenAIEncoding> {
  let encoding;
  try {
    encoding = name === "o200k_base"
      ? await import("gpt-tokenizer/encoding/o200k_base")
      : await import("gpt-tokenizer/encoding/cl100k_base");
  } catch (error) {
    if (!warned) {
      warned = true;
      logger.warn(
        "The OpenAI chat estimate needs the npm package {package}, which cannot be loaded ({errorType}): install it beside @incontext/incontext; chat requests fall back until then",
        { package: GPT_TOKENIZER, errorType: errorType(error) },
      );
    }
    throw new CountError(
      `Cannot estimate a chat request as the npm package ${GPT_TOKENIZER} cannot be loaded: install it beside @incontext/incontext (npm install ${GPT_TOKENIZER})`,
      { cause: safeCause(error) },
    );
  }
  const plain = { disallowedSpecial: new Set<string>() };
  return {
    name,
    count: (text) => text === "" ? 0 : encoding.countTokens(text, plain),
  };
}

const PER_MESSAGE = 3;
const PER_NAME = 1;
const PRIMING = 3;
const PER_TOOL_CALL = 3;
/** The cookbook's tool constants; only `perFunction` differs between encodings. */
const TOOLS = {
  perFunction: { o200k_base: 7, cl100k_base: 10 },
  propertiesStart: 3,
  perProperty: 3,
  enumStart: -3,
  perEnumValue: 3,
  end: 12,
} as const;

/**
 * Estimates the prompt tokens of a Chat Completions request.
 *
 * @throws {CountError} For a request without a messages array, a message
 * that is not an object, a media part, or a tool that is not a function.
 */
export function estimateChatTokens(
  request: JsonObject,
  encoding: OpenAIEncoding,
): number {
  const messages = effectiveField(request, "messages");
  if (!Array.isArray(messages)) {
    throw new CountError("Cannot estimate a request without a messages array");
  }
  const { count } = encoding;
  let total = PRIMING;
  for (const message of messages) {
    if (!isJsonObject(message)) {
      throw new CountError("Cannot estimate a message that is not an object");
    }
    total += messageTokens(message, count);
  }
  const functions = toolFunctions(request);
  if (functions.length === 0) return total;
  for (const fn of functions) total += functionTokens(fn, encoding);
  return total + TOOLS.end;
}

function messageTokens(message: JsonObject, count: TextCounter): number {
  let tokens = PER_MESSAGE;
  for (const [key, value] of Object.entries(message)) {
    if (key === "content") tokens += contentTokens(value, count);
    else if (key === "tool_calls") tokens += toolCallTokens(value, count);
    else if (typeof value === "string") {
      tokens += count(value) + (key === "name" ? PER_NAME : 0);
    }
  }
  return tokens;
}

function contentTokens(content: unknown, count: TextCounter): number {
  if (typeof content === "string") return count(content);
  if (!Array.isArray(content)) return 0;
  let tokens = 0;
  for (const part of content) {
    const text = !isJsonObject(part)
      ? undefined
      : part.type === "text"
      ? part.text
      : part.type === "refusal"
      ? part.refusal
      : undefined;
    if (typeof text !== "string") {
      throw new CountError(
        "Cannot estimate a content part that is not text (media are sized by the provider)",
      );
    }
    tokens += count(text);
  }
  return tokens;
}

function toolCallTokens(calls: unknown, count: TextCounter): number {
  if (!Array.isArray(calls)) return 0;
  let tokens = 0;
  for (const call of calls) {
    const fn = isJsonObject(call) ? call.function : undefined;
    if (!isJsonObject(fn)) continue;
    for (const value of [fn.name, fn.arguments]) {
      if (typeof value === "string") tokens += count(value);
    }
    tokens += PER_TOOL_CALL;
  }
  return tokens;
}

/** The function definitions of `tools` (and of the legacy `functions`). */
function toolFunctions(request: JsonObject): JsonObject[] {
  const functions: JsonObject[] = [];
  const tools = effectiveField(request, "tools");
  for (const tool of Array.isArray(tools) ? tools : []) {
    if (!isJsonObject(tool) || tool.type !== "function") {
      throw new CountError("Cannot estimate a tool that is not a function");
    }
    if (isJsonObject(tool.function)) functions.push(tool.function);
  }
  const legacy = effectiveField(request, "functions");
  for (const fn of Array.isArray(legacy) ? legacy : []) {
    if (isJsonObject(fn)) functions.push(fn);
  }
  return functions;
}

/** One function definition, as the cookbook's `num_tokens_for_tools` counts it. */
function functionTokens(fn: JsonObject, encoding: OpenAIEncoding): number {
  const { count } = encoding;
  let tokens = TOOLS.perFunction[encoding.name] +
    count(`${text(fn.name)}:${withoutPeriod(fn.description)}`);
  const parameters = isJsonObject(fn.parameters) ? fn.parameters : {};
  const properties = isJsonObject(parameters.properties)
    ? Object.entries(parameters.properties)
    : [];
  if (properties.length > 0) tokens += TOOLS.propertiesStart;
  for (const [key, property] of properties) {
    const schema = isJsonObject(property) ? property : {};
    tokens += TOOLS.perProperty;
    if (Array.isArray(schema.enum)) {
      tokens += TOOLS.enumStart;
      for (const value of schema.enum) {
        tokens += TOOLS.perEnumValue + count(text(value));
      }
    }
    tokens += count(
      `${key}:${text(schema.type)}:${withoutPeriod(schema.description)}`,
    );
  }
  return tokens;
}

function text(value: unknown): string {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

function withoutPeriod(value: unknown): string {
  const description = text(value);
  return description.endsWith(".") ? description.slice(0, -1) : description;
}
