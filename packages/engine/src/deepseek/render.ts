/**
 * vLLM's DeepSeek renderers (`vllm/renderers/deepseek_v32.py`,
 * `deepseek_v4.py`) and the tokenizer wrappers they call
 * (`vllm/tokenizers/deepseek_v32.py`, `deepseek_v4.py`): the conversation
 * preprocessed with string content, the keyword arguments merged as the
 * chat path merges them, the request's tools inserted as a first system
 * message, then the encoder. The wrappers read `thinking` or
 * `enable_thinking`, `tokenize`, and for V4 `reasoning_effort` and
 * `drop_thinking`; V3.2 drops earlier reasoning when the last message is the
 * user's. `add_generation_prompt` and `continue_final_message` change
 * nothing: the encoders always end on the assistant's turn.
 *
 * @module
 */
import { EngineError } from "../common/errors.ts";
import { isJsonObject } from "../common/request.ts";
import type { VllmRules } from "../vllm/release.ts";
import { get, type Message, pyTruthy, refuse } from "./common.ts";
import { encodeV32 } from "./v32.ts";
import { encodeV4 } from "./v4.ts";
import { templateContext } from "../vllm/preprocess.ts";

/** A chat payload rendered for the tokenizer, and how the server tokenizes it. */
export interface RenderedChat {
  /** The prompt, in parts (one when `split` is false). */
  readonly parts: string[];
  /** Whether the tokenizer adds its special tokens to the prompt. */
  readonly addSpecialTokens: boolean;
}

/** Options of {@linkcode renderDeepseek}. */
export interface DeepseekRenderOptions {
  /** The preprocessing rules of the vLLM release mirrored. */
  readonly rules: VllmRules;
  /** Whether the prompt comes in parts (one per message). */
  readonly split: boolean;
}

/**
 * Renders a `/tokenize` chat payload as vLLM's `deepseek_v32` or
 * `deepseek_v4` tokenizer mode does.
 *
 * @param mode The tokenizer mode.
 * @param payload A payload from `buildTokenizePayload`.
 * @param options The release's rules; whether to split the prompt.
 * @returns The prompt and whether special tokens are added to it.
 * @throws {RequestRejectedError} Where vLLM's wrapper or encoder raises.
 * @throws {EngineError} For what cannot be mirrored (media, malformed
 * messages, a truncating `tokenize`).
 */
export function renderDeepseek(
  mode: "deepseek_v32" | "deepseek_v4",
  payload: Readonly<Record<string, unknown>>,
  options: DeepseekRenderOptions,
): RenderedChat {
  const { conversation, tools } = preprocessed(payload, options.rules);
  const kwargs = templateKwargs(payload, tools);
  if (
    Object.hasOwn(kwargs, "conversation") || Object.hasOwn(kwargs, "messages")
  ) {
    throw refuse("chat_template_kwargs repeats an argument of the renderer");
  }
  const messages = withTools(conversation, kwargs.tools);
  const thinking = pyTruthy(kwargs.thinking ?? false) ||
    pyTruthy(kwargs.enable_thinking ?? false);
  let parts: string[];
  if (mode === "deepseek_v32") {
    // Historical reasoning is dropped when a new user message comes.
    const last = messages.at(-1);
    if (last === undefined) throw refuse("the conversation is empty");
    parts = encodeV32(messages, {
      thinking,
      dropThinking: get(last, "role") === "user",
    });
  } else {
    const { effort, chat } = reasoningEffort(kwargs.reasoning_effort);
    parts = encodeV4(messages, {
      thinking: thinking && !chat,
      dropThinking: pyTruthy(kwargs.drop_thinking ?? true),
      reasoningEffort: effort,
    });
  }
  return {
    parts: options.split ? parts : [parts.join("")],
    addSpecialTokens: specialTokens(payload, kwargs),
  };
}

/**
 * The conversation as vLLM's `parse_chat_messages` gives it with string
 * content (the project's preprocessing, plus the `task` and a developer
 * message's `tools` it passes on), and the request's tools as dumped.
 */
function preprocessed(
  payload: Readonly<Record<string, unknown>>,
  rules: VllmRules,
): { conversation: Message[]; tools: unknown } {
  const raw = payload.messages as unknown[];
  // The shared preprocessing refuses an empty conversation, as transformers
  // does; the DeepSeek wrappers take one, so it reads a stand-in message.
  const { context } = templateContext(
    raw.length > 0 ? payload : { ...payload, messages: [{ role: "user" }] },
    { specialTokens: {}, contentFormat: "string", rules },
  );
  const messages = raw.length > 0 ? context.messages as Message[] : [];
  const conversation = messages.map((message, index) => {
    const source = raw[index] as Record<string, unknown>;
    const extra: Record<string, unknown> = {};
    if (typeof source.task === "string") extra.task = source.task;
    if (message.role === "developer") extra.tools = source.tools ?? null;
    return { ...message, ...extra };
  });
  return { conversation, tools: context.tools };
}

/**
 * The keyword arguments the wrapper receives: the request's tools and
 * `tokenize=False`, under the request's `chat_template_kwargs` whose values
 * are not None or `"auto"` (vLLM's `merge_kwargs`).
 */
function templateKwargs(
  payload: Readonly<Record<string, unknown>>,
  tools: unknown,
): Record<string, unknown> {
  const given = payload.chat_template_kwargs ?? {};
  if (!isJsonObject(given)) {
    throw new EngineError(
      "Cannot count the request as 'chat_template_kwargs' is not an object",
    );
  }
  const kwargs: Record<string, unknown> = { tools, tokenize: false };
  for (const [key, value] of Object.entries(given)) {
    if (value !== null && value !== "auto") kwargs[key] = value;
  }
  return kwargs;
}

/** The conversation with the tools as a first system message, when there are any. */
function withTools(conversation: Message[], tools: unknown): Message[] {
  if (tools === null || tools === undefined) return conversation;
  let size: number;
  if (typeof tools === "string" || Array.isArray(tools)) size = tools.length;
  else if (isJsonObject(tools)) size = Object.keys(tools).length;
  else throw refuse("tools has no length");
  return size > 0 ? [{ role: "system", tools }, ...conversation] : conversation;
}

/** The V4 wrapper's effort: `none` turns thinking off; `max` and `xhigh` are max; others high. */
function reasoningEffort(
  value: unknown,
): { effort: "max" | "high" | null; chat: boolean } {
  if (typeof value !== "string") return { effort: null, chat: false };
  if (value === "none") return { effort: null, chat: true };
  return {
    effort: value === "max" || value === "xhigh" ? "max" : "high",
    chat: false,
  };
}

/**
 * Whether special tokens are added: the request's `add_special_tokens`,
 * unless `tokenize` makes the wrapper encode the prompt itself, without them.
 */
function specialTokens(
  payload: Readonly<Record<string, unknown>>,
  kwargs: Record<string, unknown>,
): boolean {
  if (!pyTruthy(kwargs.tokenize)) return payload.add_special_tokens === true;
  if (
    Object.hasOwn(kwargs, "truncation") || Object.hasOwn(kwargs, "max_length")
  ) {
    throw new EngineError(
      "Cannot count the request locally as its chat_template_kwargs truncate the prompt",
    );
  }
  return false;
}
