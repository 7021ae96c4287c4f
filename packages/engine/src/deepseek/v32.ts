/**
 * DeepSeek V3.2's prompt format, as vLLM's `deepseek_v32` tokenizer mode
 * writes it (`vllm/tokenizers/deepseek_v32_encoding.py`, `encode_messages`
 * with no context and the BOS token). Fields vLLM's preprocessing never
 * passes on (`prefix`, `response_format`) are not read.
 *
 * @module
 */
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
export interface V32Options {
  /** `thinking_mode == "thinking"`, else `"chat"`. */
  readonly thinking: boolean;
  /** Whether reasoning before the last user message is dropped (in thinking mode). */
  readonly dropThinking: boolean;
}

/**
 * Encodes a conversation: the BOS token, then one part per message.
 *
 * @param messages The conversation after vLLM's preprocessing.
 * @param options The thinking mode and whether earlier reasoning is dropped.
 * @returns The prompt in parts.
 * @throws {RequestRejectedError} Where vLLM's encoder raises.
 */
export function encodeV32(
  messages: readonly Message[],
  options: V32Options,
): string[] {
  const { thinking } = options;
  const full = thinking && options.dropThinking
    ? dropThinking(messages)
    : messages;
  // The encoder renders as many messages as it was given, from the shorter
  // list: a dropped message makes it index past the end.
  if (full.length < messages.length) {
    throw refuse("a message before the last user message was dropped");
  }
  const context: Context = {
    messages: full,
    thinking,
    last: lastUserIndex(full),
  };
  return [BOS, ...full.map((_, index) => renderMessage(index, context))];
}

interface Context {
  readonly messages: readonly Message[];
  readonly thinking: boolean;
  readonly last: number;
}

const TOOLS_TEMPLATE_HEAD = `## Tools
You have access to a set of tools you can use to answer the user's question.
You can invoke functions by writing a "<${DSML}function_calls>" block like the following as part of your reply to the user:
<${DSML}function_calls>
<${DSML}invoke name="$FUNCTION_NAME">
<${DSML}parameter name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</${DSML}parameter>
...
</${DSML}invoke>
<${DSML}invoke name="$FUNCTION_NAME2">
...
</${DSML}invoke>
</${DSML}function_calls>
String and scalar parameters should be specified as is without any escaping or quotes, while lists and objects should use JSON format. The "string" attribute should be set to "true" for string type parameters and "false" for other types (numbers, booleans, arrays, objects).
If the thinking_mode is enabled, then after function results you should strongly consider outputting a thinking block. Here is an example:
<${DSML}function_calls>
...
</${DSML}function_calls>
<function_results>
...
</function_results>
${THINK_START}...thinking about results${THINK_END}
Here are the functions available in JSONSchema format:
<functions>
`;

function renderTools(tools: unknown): string {
  return `${TOOLS_TEMPLATE_HEAD}${toolSchemas(tools)}\n</functions>\n`;
}

/** Python's `list[index]`, negative indices counting from the end. */
function at(messages: readonly Message[], index: number): Message {
  return messages[index < 0 ? messages.length + index : index]!;
}

function renderMessage(index: number, context: Context): string {
  const { messages, thinking, last } = context;
  const message = messages[index]!;
  const role = get(message, "role");
  const content = get(message, "content");
  const tools = get(message, "tools");
  switch (role) {
    case "system":
      return pyFormat(pyTruthy(content) ? content : "") +
        (pyTruthy(tools) ? "\n\n" + renderTools(tools) : "");
    case "developer": {
      if (!pyTruthy(content)) throw refuse("a developer message is empty");
      const head = pyTruthy(tools) ? "\n\n" + renderTools(tools) : "";
      return `${USER}${head}\n\n# The user's message is: ${
        pyFormat(content)
      }${ASSISTANT}` + thinkAfterUser(index, context);
    }
    case "user":
      return `${USER}${pyFormat(content)}${ASSISTANT}` +
        thinkAfterUser(index, context);
    case "tool":
      return renderToolResult(index, context);
    case "assistant":
      return renderAssistant(message, index > last && thinking);
  }
  throw refuse("a message has a role the encoder does not know");
}

function thinkAfterUser(index: number, { thinking, last }: Context): string {
  return index === last && thinking ? THINK_START : THINK_END;
}

function renderToolResult(index: number, context: Context): string {
  const { messages, thinking, last } = context;
  // The assistant message the results answer: the first before the run of
  // tool messages (Python indexing, so -1 is the last message).
  let previous = index - 1;
  let assistant = at(messages, previous);
  while (previous >= 0 && get(assistant, "role") === "tool") {
    previous--;
    assistant = at(messages, previous);
  }
  if (
    !(index === 0 || previous >= 0 && get(assistant, "role") === "assistant")
  ) throw refuse("a tool message follows no assistant message");
  const order = index - previous;
  const calls = get(assistant, "tool_calls");
  if (!(pyTruthy(calls) && Array.isArray(calls) && calls.length >= order)) {
    throw refuse("a tool message answers no tool call");
  }
  let prompt = order === 1 ? "\n\n<function_results>" : "";
  prompt += `\n<result>${pyFormat(get(messages[index]!, "content"))}</result>`;
  if (order === calls.length) {
    prompt += "\n</function_results>\n\n" +
      (index >= last && thinking ? THINK_START : THINK_END);
  }
  return prompt;
}

function renderAssistant(message: Message, withThinking: boolean): string {
  const calls = dsmlToolCalls(get(message, "tool_calls"), "function_calls");
  const content = get(message, "content");
  const reasoning = get(message, "reasoning");
  let thinkingPart = "";
  if (withThinking) {
    if (!(pyTruthy(reasoning) || calls !== "")) {
      throw refuse(
        "an assistant message after the last user message has neither reasoning nor tool calls",
      );
    }
    thinkingPart = pyFormat(pyTruthy(reasoning) ? reasoning : "") + THINK_END;
  }
  return thinkingPart + pyFormat(pyTruthy(content) ? content : "") + calls +
    EOS;
}

/**
 * `drop_thinking_messages`: reasoning removed from the assistant messages
 * before the last user message, and the other messages there dropped,
 * except user, system and tool messages.
 */
function dropThinking(messages: readonly Message[]): Message[] {
  const last = lastUserIndex(messages);
  const kept: Message[] = [];
  messages.forEach((message, index) => {
    const role = get(message, "role");
    if (
      role === "user" || role === "system" || role === "tool" || index >= last
    ) {
      kept.push(message);
    } else if (role === "assistant") {
      const { reasoning: _, ...rest } = message;
      kept.push(rest);
    }
  });
  return kept;
}
