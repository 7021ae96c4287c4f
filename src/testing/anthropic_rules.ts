/**
 * The request rules of Anthropic's `POST /v1/messages/count_tokens`, as the
 * fake enforces them, and the fake's deterministic count. Each rule returns
 * the message the real API answers with a 400 `invalid_request_error`.
 */
import { isJsonObject as isObject } from "../core/request.ts";

/** The keys of `object` outside `allowed`, in order. */
function unknownKeys(object: Obj, allowed: readonly string[]): string[] {
  return Object.keys(object).filter((key) => !allowed.includes(key));
}

type Obj = { readonly [key: string]: unknown };

const TOP_LEVEL = [
  "model",
  "messages",
  "system",
  "tools",
  "tool_choice",
  "thinking",
];
const MEDIA_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/** Why the real API would reject `body` with a 400, or `undefined` when it accepts it. */
export function anthropicRequestProblem(body: unknown): string | undefined {
  if (!isObject(body)) return "Request body must be a JSON object";
  const extra = unknownKeys(body, TOP_LEVEL)[0];
  if (extra !== undefined) return `${extra}: Extra inputs are not permitted`;
  if (typeof body.model !== "string" || body.model === "") {
    return "model: Field required";
  }
  return systemProblem(body.system) ?? messagesProblem(body.messages) ??
    toolsProblem(body.tools) ?? toolChoiceProblem(body.tool_choice) ??
    thinkingProblem(body.thinking);
}

function systemProblem(system: unknown): string | undefined {
  if (system === undefined || typeof system === "string") return undefined;
  if (!Array.isArray(system)) return "system: Input should be a valid list";
  for (const [index, block] of system.entries()) {
    if (!isObject(block) || block.type !== "text") {
      return `system.${index}.type: Input should be 'text'`;
    }
    const problem = textProblem(block, `system.${index}`);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function messagesProblem(messages: unknown): string | undefined {
  if (!Array.isArray(messages)) return "messages: Field required";
  if (messages.length === 0) {
    return "messages: at least one message is required";
  }
  let previous: Obj | undefined;
  for (const [index, message] of messages.entries()) {
    const at = `messages.${index}`;
    if (!isObject(message)) return `${at}: Input should be a valid dictionary`;
    const extra = unknownKeys(message, ["role", "content"])[0];
    if (extra !== undefined) {
      return `${at}.${extra}: Extra inputs are not permitted`;
    }
    if (message.role !== "user" && message.role !== "assistant") {
      return `${at}.role: Input should be 'user' or 'assistant'`;
    }
    if (previous?.role === message.role) {
      return `messages: roles must alternate between "user" and "assistant", but found multiple "${message.role}" roles in a row`;
    }
    const last = index === messages.length - 1 && message.role === "assistant";
    const problem = contentProblem(message, at, last) ??
      toolPairProblem(previous, message, at);
    if (problem !== undefined) return problem;
    previous = message;
  }
  return undefined;
}

function contentProblem(
  message: Obj,
  at: string,
  last: boolean,
): string | undefined {
  const { content, role } = message;
  if (typeof content === "string") {
    return content === "" && !last
      ? `${at}: all messages must have non-empty content except for the optional final assistant message`
      : undefined;
  }
  if (!Array.isArray(content)) return `${at}.content: Field required`;
  if (content.length === 0 && !last) {
    return `${at}: all messages must have non-empty content except for the optional final assistant message`;
  }
  for (const [index, block] of content.entries()) {
    const problem = blockProblem(block, `${at}.content.${index}`, role);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function blockProblem(
  block: unknown,
  at: string,
  role: unknown,
): string | undefined {
  if (!isObject(block)) return `${at}: Input should be a valid dictionary`;
  switch (block.type) {
    case "text":
      return textProblem(block, at);
    case "image":
      return imageProblem(block, at);
    case "document":
      return isObject(block.source)
        ? undefined
        : `${at}.source: Field required`;
    case "tool_use":
      if (role !== "assistant") {
        return `${at}: tool_use blocks are only allowed in assistant messages`;
      }
      if (typeof block.id !== "string" || !/^[a-zA-Z0-9_-]+$/.test(block.id)) {
        return `${at}.id: String should match pattern '^[a-zA-Z0-9_-]+$'`;
      }
      if (typeof block.name !== "string") return `${at}.name: Field required`;
      return isObject(block.input)
        ? undefined
        : `${at}.input: Input should be a valid dictionary`;
    case "tool_result":
      if (role !== "user") {
        return `${at}: tool_result blocks are only allowed in user messages`;
      }
      if (typeof block.tool_use_id !== "string") {
        return `${at}.tool_use_id: Field required`;
      }
      return toolResultContentProblem(block.content, `${at}.content`);
    case "thinking":
      return typeof block.thinking === "string" &&
          typeof block.signature === "string"
        ? undefined
        : `${at}.signature: Field required`;
    case "redacted_thinking":
      return typeof block.data === "string"
        ? undefined
        : `${at}.data: Field required`;
    default:
      return `${at}: Input tag '${
        String(block.type)
      }' found using 'type' does not match any of the expected tags`;
  }
}

function textProblem(block: Obj, at: string): string | undefined {
  const extra =
    unknownKeys(block, ["type", "text", "cache_control", "citations"])[
      0
    ];
  if (extra !== undefined) {
    return `${at}.${extra}: Extra inputs are not permitted`;
  }
  if (typeof block.text !== "string") return `${at}.text: Field required`;
  return block.text === ""
    ? `${at}: text content blocks must be non-empty`
    : undefined;
}

function imageProblem(block: Obj, at: string): string | undefined {
  const source = block.source;
  if (!isObject(source)) return `${at}.source: Field required`;
  if (source.type === "url") {
    return typeof source.url === "string"
      ? undefined
      : `${at}.source.url: Field required`;
  }
  if (source.type !== "base64" || typeof source.data !== "string") {
    return `${at}.source: Input should be a base64 or url source`;
  }
  return MEDIA_TYPES.includes(String(source.media_type))
    ? undefined
    : `${at}.source.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`;
}

function toolResultContentProblem(
  content: unknown,
  at: string,
): string | undefined {
  if (content === undefined || typeof content === "string") return undefined;
  if (!Array.isArray(content)) return `${at}: Input should be a valid list`;
  for (const [index, block] of content.entries()) {
    if (!isObject(block)) {
      return `${at}.${index}: Input should be a valid dictionary`;
    }
    const problem = block.type === "text"
      ? textProblem(block, `${at}.${index}`)
      : block.type === "image"
      ? imageProblem(block, `${at}.${index}`)
      : `${at}.${index}: Input tag '${
        String(block.type)
      }' found using 'type' does not match any of the expected tags`;
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/** Every tool_use of an assistant turn needs a tool_result in the next message, and only those. */
function toolPairProblem(
  previous: Obj | undefined,
  message: Obj,
  at: string,
): string | undefined {
  const uses = blocksOf(previous, "tool_use").map((block) => block.id);
  const results = blocksOf(message, "tool_result").map((b) => b.tool_use_id);
  const missing = uses.filter((id) => !results.includes(id));
  if (missing.length > 0) {
    return `${at}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${
      missing.join(", ")
    }. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
  }
  const unexpected = results.filter((id) => !uses.includes(id));
  if (unexpected.length > 0) {
    return `${at}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${
      unexpected.join(", ")
    }. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
  }
  return undefined;
}

function blocksOf(message: Obj | undefined, type: string): Obj[] {
  const content = message?.content;
  if (!Array.isArray(content)) return [];
  return content.filter((block): block is Obj =>
    isObject(block) && block.type === type
  );
}

function toolsProblem(tools: unknown): string | undefined {
  if (tools === undefined) return undefined;
  if (!Array.isArray(tools)) return "tools: Input should be a valid list";
  for (const [index, tool] of tools.entries()) {
    const at = `tools.${index}`;
    if (!isObject(tool)) return `${at}: Input should be a valid dictionary`;
    if (
      typeof tool.name !== "string" || !/^[a-zA-Z0-9_-]{1,128}$/.test(tool.name)
    ) {
      return `${at}.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`;
    }
    // Server tools (web search, bash, ...) carry their own versioned type.
    if (tool.type !== undefined && tool.type !== "custom") continue;
    const extra = unknownKeys(tool, [
      "type",
      "name",
      "description",
      "input_schema",
      "cache_control",
    ])[0];
    if (extra !== undefined) {
      return `${at}.${extra}: Extra inputs are not permitted`;
    }
    if (!isObject(tool.input_schema) || tool.input_schema.type !== "object") {
      return `${at}.input_schema.type: Input should be 'object'`;
    }
  }
  return undefined;
}

function toolChoiceProblem(choice: unknown): string | undefined {
  if (choice === undefined) return undefined;
  if (!isObject(choice)) {
    return "tool_choice: Input should be a valid dictionary";
  }
  if (!["auto", "any", "none", "tool"].includes(String(choice.type))) {
    return "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'";
  }
  if (choice.type === "tool" && typeof choice.name !== "string") {
    return "tool_choice.tool.name: Field required";
  }
  const extra =
    unknownKeys(choice, ["type", "name", "disable_parallel_tool_use"])[
      0
    ];
  return extra === undefined
    ? undefined
    : `tool_choice.${extra}: Extra inputs are not permitted`;
}

function thinkingProblem(thinking: unknown): string | undefined {
  if (thinking === undefined) return undefined;
  if (!isObject(thinking)) {
    return "thinking: Input should be a valid dictionary";
  }
  if (thinking.type === "disabled") return undefined;
  if (thinking.type !== "enabled") {
    return "thinking.type: Input should be 'enabled' or 'disabled'";
  }
  const budget = thinking.budget_tokens;
  return Number.isSafeInteger(budget) && (budget as number) >= 1024
    ? undefined
    : "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024";
}

/** Tokens the fake charges per image, whatever its size. */
export const FAKE_IMAGE_TOKENS = 1600;

/**
 * The fake's count of a valid body: ceil(characters / 4) of its rendered
 * text (system, each turn's role and text, tool names and inputs, tool
 * results, thinking, tool definitions as JSON), plus 4 per message and
 * {@linkcode FAKE_IMAGE_TOKENS} per image. Deterministic and
 * content-sensitive, not Claude's tokenizer.
 */
export function fakeAnthropicCount(body: Obj): number {
  const texts: string[] = [];
  let images = 0;
  const collect = (block: unknown): void => {
    if (typeof block === "string") texts.push(block);
    else if (!isObject(block)) return;
    else if (block.type === "image") images += 1;
    else if (block.type === "text") texts.push(String(block.text));
    else if (block.type === "thinking") texts.push(String(block.thinking));
    else if (block.type === "tool_use") {
      texts.push(String(block.name), JSON.stringify(block.input));
    } else if (block.type === "tool_result") {
      const { content } = block;
      if (Array.isArray(content)) content.forEach(collect);
      else collect(content);
    }
  };
  const { system, messages, tools } = body;
  if (Array.isArray(system)) system.forEach(collect);
  else collect(system);
  const turns = Array.isArray(messages) ? messages : [];
  for (const message of turns) {
    if (!isObject(message)) continue;
    texts.push(String(message.role));
    if (Array.isArray(message.content)) message.content.forEach(collect);
    else collect(message.content);
  }
  if (Array.isArray(tools)) texts.push(JSON.stringify(tools));
  const chars = texts.join("\n").length;
  return Math.ceil(chars / 4) + 4 * turns.length + FAKE_IMAGE_TOKENS * images;
}
