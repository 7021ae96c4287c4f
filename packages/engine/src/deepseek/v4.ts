/**
 * DeepSeek V4's prompt format, as vLLM's `deepseek_v4` tokenizer mode writes
 * it (`vllm/tokenizers/deepseek_v4_encoding.py`, `encode_messages` with no
 * context and the BOS token): tool results merged into user messages and
 * ordered as the calls were, task tokens, the reasoning-effort preamble.
 * Fields vLLM's preprocessing never passes on (`wo_eos`, `mask`,
 * `response_format`) are not read.
 *
 * @module
 */
import { isJsonObject } from "../common/request.ts";
import {
  ASSISTANT,
  BOS,
  DSML,
  dsmlToolCalls,
  EOS,
  get,
  lastUserIndex,
  type Message,
  pyFormat,
  pyTruthy,
  refuse,
  THINK_END,
  THINK_START,
  toolSchemas,
  USER,
} from "./common.ts";

/** How the conversation is encoded. */
export interface V4Options {
  /** `thinking_mode == "thinking"`, else `"chat"`. */
  readonly thinking: boolean;
  /** Whether reasoning before the last user message is dropped. */
  readonly dropThinking: boolean;
  /** The reasoning effort, as the tokenizer wrapper maps it. */
  readonly reasoningEffort: "max" | "high" | null;
}

const LATEST_REMINDER = "<｜latest_reminder｜>";

/** The task tokens of the internal classification tasks. */
const TASK_TOKENS: Readonly<Record<string, string>> = {
  action: "<｜action｜>",
  query: "<｜query｜>",
  authority: "<｜authority｜>",
  domain: "<｜domain｜>",
  title: "<｜title｜>",
  read_url: "<｜read_url｜>",
};

const REASONING_EFFORT_MAX =
  "Reasoning Effort: Absolute maximum with no shortcuts permitted.\n" +
  "You MUST be very thorough in your thinking and comprehensively decompose the problem to resolve the root cause, rigorously stress-testing your logic against all potential paths, edge cases, and adversarial scenarios.\n" +
  "Explicitly write out your entire deliberation process, documenting every intermediate step, considered alternative, and rejected hypothesis to ensure absolutely no assumption is left unchecked.\n\n";

const TOOLS_TEMPLATE_HEAD = `## Tools

You have access to a set of tools to help answer the user's question. You can invoke tools by writing a "<${DSML}tool_calls>" block like the following:

<${DSML}tool_calls>
<${DSML}invoke name="$TOOL_NAME">
<${DSML}parameter name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</${DSML}parameter>
...
</${DSML}invoke>
<${DSML}invoke name="$TOOL_NAME2">
...
</${DSML}invoke>
</${DSML}tool_calls>

String parameters should be specified as is and set \`string="true"\`. For all other types (numbers, booleans, arrays, objects), pass the value in JSON format and set \`string="false"\`.

If thinking_mode is enabled (triggered by ${THINK_START}), you MUST output your complete reasoning inside ${THINK_START}...${THINK_END} BEFORE any tool calls or final response.

Otherwise, output directly after ${THINK_END} with tool calls or final response.

### Available Tool Schemas

`;

function renderTools(tools: unknown): string {
  return `${TOOLS_TEMPLATE_HEAD}${
    toolSchemas(tools)
  }\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.\n`;
}

/**
 * Encodes a conversation: the BOS token, then one part per message after
 * the tool results are merged into user messages.
 *
 * @param messages The conversation after vLLM's preprocessing.
 * @param options The thinking mode, the dropping of earlier reasoning, the effort.
 * @returns The prompt in parts.
 * @throws {RequestRejectedError} Where vLLM's encoder raises.
 */
export function encodeV4(
  messages: readonly Message[],
  options: V4Options,
): string[] {
  let full = sortToolResults(mergeToolMessages(messages));
  // A conversation that defines tools keeps every turn's reasoning.
  const dropThinking = options.dropThinking &&
    !full.some((message) => pyTruthy(get(message, "tools")));
  if (options.thinking && dropThinking) full = dropThinkingMessages(full);
  const context: Context = {
    messages: full,
    last: lastUserIndex(full),
    thinking: options.thinking,
    dropThinking,
    reasoningEffort: options.reasoningEffort,
  };
  return [BOS, ...full.map((_, index) => renderMessage(index, context))];
}

interface Context extends V4Options {
  readonly messages: readonly Message[];
  readonly last: number;
}

function renderMessage(index: number, context: Context): string {
  const { messages, thinking } = context;
  const message = messages[index]!;
  let prompt = index === 0 && thinking && context.reasoningEffort === "max"
    ? REASONING_EFFORT_MAX
    : "";
  prompt += renderBody(message, index, context);
  const next = messages[index + 1];
  if (next !== undefined) {
    const role = get(next, "role");
    if (role !== "assistant" && role !== "latest_reminder") return prompt;
  }
  const task = get(message, "task");
  const role = get(message, "role");
  if (task !== null) {
    if (typeof task !== "string" || !Object.hasOwn(TASK_TOKENS, task)) {
      throw refuse("a message names an unknown task");
    }
    if (task !== "action") return prompt + TASK_TOKENS[task];
    return prompt + ASSISTANT + (thinking ? THINK_START : THINK_END) +
      TASK_TOKENS[task];
  }
  if (role === "user" || role === "developer") {
    const open = thinking && (!context.dropThinking || index >= context.last);
    return prompt + ASSISTANT + (open ? THINK_START : THINK_END);
  }
  return prompt;
}

function renderBody(message: Message, index: number, context: Context): string {
  const content = get(message, "content");
  const tools = get(message, "tools");
  switch (get(message, "role")) {
    case "system":
      return pyFormat(pyTruthy(content) ? content : "") +
        (pyTruthy(tools) ? "\n\n" + renderTools(tools) : "");
    case "developer":
      if (!pyTruthy(content)) throw refuse("a developer message is empty");
      if (typeof content !== "string") {
        throw refuse("a developer message's content is not text");
      }
      return USER + content +
        (pyTruthy(tools) ? "\n\n" + renderTools(tools) : "");
    case "user":
      return USER + userText(message);
    case "latest_reminder":
      return LATEST_REMINDER + pyFormat(content);
    case "tool":
      throw refuse("a tool message was not merged");
    case "assistant":
      return renderAssistant(message, index, context);
  }
  throw refuse("a message has a role the encoder does not know");
}

/** A user message's text: its blocks (texts and tool results) or its content. */
function userText(message: Message): string {
  const blocks = get(message, "content_blocks");
  if (!pyTruthy(blocks)) {
    const content = get(message, "content");
    return pyTruthy(content) ? pyFormat(content) : "";
  }
  return (blocks as Message[]).map((block) => {
    const type = get(block, "type");
    if (type === "text") {
      return Object.hasOwn(block, "text") ? pyFormat(block.text) : "";
    }
    if (type === "tool_result") {
      const content = Object.hasOwn(block, "content") ? block.content : "";
      return `<tool_result>${pyFormat(content)}</tool_result>`;
    }
    return `[Unsupported ${pyFormat(type)}]`;
  }).join("\n\n");
}

function renderAssistant(
  message: Message,
  index: number,
  context: Context,
): string {
  const { messages, thinking } = context;
  const calls = dsmlToolCalls(get(message, "tool_calls"), "tool_calls");
  const content = get(message, "content");
  const reasoning = get(message, "reasoning");
  // An answer to a task message is the task's output: it never thinks.
  const afterTask = index > 0 && get(messages[index - 1]!, "task") !== null;
  let thinkingPart = "";
  if (
    thinking && !afterTask && (!context.dropThinking || index > context.last)
  ) {
    thinkingPart = pyFormat(pyTruthy(reasoning) ? reasoning : "") + THINK_END;
  }
  return thinkingPart + pyFormat(pyTruthy(content) ? content : "") + calls +
    EOS;
}

/**
 * `merge_tool_messages`: each tool message becomes a tool-result block of a
 * user message (the previous one, when it is a merged user message), and a
 * user message joins the previous merged one unless that one has a task.
 */
function mergeToolMessages(messages: readonly Message[]): Message[] {
  const merged: Record<string, unknown>[] = [];
  for (const message of messages) {
    const role = get(message, "role");
    const previous = merged.at(-1);
    const open = previous !== undefined && get(previous, "role") === "user" &&
      Object.hasOwn(previous, "content_blocks");
    if (role === "tool") {
      const block = {
        type: "tool_result",
        tool_use_id: Object.hasOwn(message, "tool_call_id")
          ? message.tool_call_id
          : "",
        content: Object.hasOwn(message, "content") ? message.content : "",
      };
      if (open) (previous.content_blocks as unknown[]).push(block);
      else merged.push({ role: "user", content_blocks: [block] });
    } else if (role === "user") {
      const text = Object.hasOwn(message, "content") ? message.content : "";
      const block = { type: "text", text };
      if (open && get(previous, "task") === null) {
        (previous.content_blocks as unknown[]).push(block);
      } else {
        merged.push({
          role: "user",
          content: text,
          content_blocks: [block],
          ...(Object.hasOwn(message, "task") ? { task: message.task } : {}),
        });
      }
    } else merged.push({ ...message });
  }
  return merged;
}

/**
 * `sort_tool_results_by_call_order`: a user message's tool results in the
 * order of the calls of the last assistant message that made calls
 * (results naming no known call first, in their order).
 */
function sortToolResults(messages: Message[]): Message[] {
  let order = new Map<unknown, number>();
  for (const message of messages) {
    const role = get(message, "role");
    const calls = get(message, "tool_calls");
    if (role === "assistant" && pyTruthy(calls)) {
      order = callOrder(calls);
    } else if (role === "user" && pyTruthy(get(message, "content_blocks"))) {
      const blocks = message.content_blocks as Message[];
      const results = blocks.filter((block) =>
        get(block, "type") === "tool_result"
      );
      if (results.length > 1 && order.size > 0) {
        const rank = (block: Message) =>
          order.get(hashKey(get(block, "tool_use_id"))) ?? 0;
        const sorted = [...results].sort((a, b) => rank(a) - rank(b));
        let next = 0;
        (message as Record<string, unknown>).content_blocks = blocks.map((
          block,
        ) => get(block, "type") === "tool_result" ? sorted[next++]! : block);
      }
    }
  }
  return messages;
}

/** Each call's id (its own, else its function's) and its position; later repeats win. */
function callOrder(calls: unknown): Map<unknown, number> {
  const order = new Map<unknown, number>();
  if (!Array.isArray(calls)) throw refuse("tool_calls is not a list");
  calls.forEach((call, index) => {
    if (!isJsonObject(call)) throw refuse("a tool call is not an object");
    let id = get(call, "id");
    if (!pyTruthy(id)) {
      const fn = Object.hasOwn(call, "function") ? call.function : {};
      if (!isJsonObject(fn)) {
        throw refuse("a tool call's function is not an object");
      }
      id = Object.hasOwn(fn, "id") ? fn.id : "";
    }
    if (pyTruthy(id)) order.set(hashKey(id), index);
  });
  return order;
}

/** A Python dict key as a JavaScript map key: strings and numbers; others cannot be hashed. */
function hashKey(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  throw refuse("a tool call id cannot be a dictionary key");
}

/**
 * `_drop_thinking_messages`: before the last user message, assistant
 * messages lose their reasoning and the messages of other roles than user,
 * system, tool, latest_reminder and direct_search_results are dropped.
 */
function dropThinkingMessages(messages: readonly Message[]): Message[] {
  const last = lastUserIndex(messages);
  const keep = new Set([
    "user",
    "system",
    "tool",
    "latest_reminder",
    "direct_search_results",
  ]);
  const kept: Message[] = [];
  messages.forEach((message, index) => {
    const role = get(message, "role");
    if (keep.has(role as string) || index >= last) kept.push(message);
    else if (role === "assistant") {
      const { reasoning: _, ...rest } = message;
      kept.push(rest);
    }
  });
  return kept;
}
