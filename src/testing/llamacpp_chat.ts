/**
 * The fake llama.cpp server's model: a ChatML chat template, llama.cpp's
 * request checks, and a deterministic word-level tokenizer whose counts grow
 * with the text. Shared with the fake TGI server.
 *
 * @module
 */

type Json = { readonly [key: string]: unknown };

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Special tokens, parsed as one token each; their ids are 1, 2, 3, 4. */
const SPECIAL = ["<s>", "</s>", "<|im_start|>", "<|im_end|>"] as const;
const SPECIAL_SPLIT = /(<s>|<\/s>|<\|im_start\|>|<\|im_end\|>)/;
/** Words, runs of white space, and single other characters are one token each. */
const PIECE = /[\p{L}\p{N}_]+|\s+|[^\s\p{L}\p{N}_]/gu;

/** The BOS token id. */
export const BOS_ID = 1;

/**
 * Tokenizes `text`: a BOS first when `addSpecial`, special tokens parsed
 * when `parseSpecial`, and one id (a hash of the piece) per piece.
 */
export function fakeTokenize(
  text: string,
  addSpecial: boolean,
  parseSpecial: boolean,
): { id: number; start: number; stop: number }[] {
  const tokens: { id: number; start: number; stop: number }[] = [];
  if (addSpecial) tokens.push({ id: BOS_ID, start: 0, stop: 0 });
  let offset = 0;
  for (const part of parseSpecial ? text.split(SPECIAL_SPLIT) : [text]) {
    const special = SPECIAL.indexOf(part as typeof SPECIAL[number]);
    if (parseSpecial && special >= 0) {
      tokens.push({
        id: special + 1,
        start: offset,
        stop: offset + part.length,
      });
    } else {
      for (const match of part.matchAll(PIECE)) {
        const start = offset + match.index;
        tokens.push({
          id: pieceId(match[0]),
          start,
          stop: start + match[0].length,
        });
      }
    }
    offset += part.length;
  }
  return tokens;
}

function pieceId(piece: string): number {
  let hash = 2166136261;
  for (let index = 0; index < piece.length; index++) {
    hash = Math.imul(hash ^ piece.charCodeAt(index), 16777619) >>> 0;
  }
  return 100 + hash % 31_900;
}

/**
 * Checks a chat body as llama.cpp's `oaicompat_chat_params_parse` does.
 *
 * @returns The message of the 400 answer, or `undefined` when valid.
 */
export function chatProblem(body: unknown): string | undefined {
  if (!isObject(body)) return "The request body must be a JSON object";
  if (!Object.hasOwn(body, "messages")) return "'messages' is required";
  if (!Array.isArray(body.messages)) {
    return "Expected 'messages' to be an array";
  }
  const format = body.response_format;
  if (isObject(format) && typeof format.type === "string") {
    if (!["text", "json_object", "json_schema"].includes(format.type)) {
      return `response_format type must be one of "text" or "json_object", but got: ${format.type}`;
    }
  }
  for (const message of body.messages) {
    if (!isObject(message)) return "Expected each message to be an object";
    if (message.role !== "assistant" && !Object.hasOwn(message, "content")) {
      return "All non-assistant messages must contain 'content'";
    }
    const { content } = message;
    if (content === undefined || content === null) continue;
    if (typeof content === "string") continue;
    if (!Array.isArray(content)) {
      return "Expected 'content' to be a string or an array";
    }
    if (content.some((part) => !isObject(part) || part.type !== "text")) {
      return "unsupported content[].type";
    }
  }
  return undefined;
}

/** The text of a message's content: parts joined, `null` as empty. */
function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part) =>
    isObject(part) && typeof part.text === "string" ? part.text : ""
  ).join("");
}

function toolCallsText(calls: unknown): string {
  if (!Array.isArray(calls)) return "";
  return calls.map((call) => {
    const fn = isObject(call) && isObject(call.function) ? call.function : {};
    const json = JSON.stringify({ name: fn.name, arguments: fn.arguments });
    return `\n<tool_call>\n${json}\n</tool_call>`;
  }).join("");
}

/**
 * Renders a valid chat body with a ChatML template: tools as a system turn
 * first, one turn per message, then the generation prompt (with an empty
 * think block when `chat_template_kwargs.enable_thinking` is false). A last
 * assistant message is a prefill, appended after the generation prompt, as
 * llama.cpp does. `bos` is printed first (TGI's templates print it).
 */
export function renderChatMl(body: Json, bos = ""): string {
  const messages = (body.messages as unknown[]).filter(isObject);
  const last = messages.at(-1);
  const prefill = last?.role === "assistant" ? last : undefined;
  let text = bos;
  const tools = body.tools;
  if (Array.isArray(tools) && tools.length > 0) {
    text += `<|im_start|>system\n# Tools\n${JSON.stringify(tools)}<|im_end|>\n`;
  }
  for (const message of prefill ? messages.slice(0, -1) : messages) {
    text += `<|im_start|>${String(message.role)}\n${
      contentText(message.content)
    }${toolCallsText(message.tool_calls)}<|im_end|>\n`;
  }
  if (body.add_generation_prompt !== false || prefill) {
    text += "<|im_start|>assistant\n";
    const kwargs = body.chat_template_kwargs;
    if (isObject(kwargs) && kwargs.enable_thinking === false) {
      text += "<think>\n\n</think>\n\n";
    }
  }
  if (prefill) text += contentText(prefill.content);
  return text;
}
