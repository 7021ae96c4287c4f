/**
 * vLLM's chat path for gpt-oss (`hf_config.model_type == "gpt_oss"`):
 * `_make_request_with_harmony` of `vllm/entrypoints/serve/render/serving.py`
 * (vLLM main of 2026-05-24) builds a system message (`get_system_message`:
 * the default identity and knowledge cutoff, the date, the reasoning
 * effort), a developer message with the request's function tools
 * (`get_developer_message`), the request's messages converted
 * (messages.ts), and renders them with openai-harmony 0.0.8's
 * `render_conversation_for_completion(..., Role.ASSISTANT)`, whose
 * `auto_drop_analysis` is on (`src/encoding.rs`). The chat template,
 * `chat_template_kwargs` and `response_format` are not read; `tool_choice`
 * is only validated. vLLM's `/tokenize` renders the chat template instead:
 * only chat and Responses requests (responses.ts) take this path.
 *
 * The render is a list of pieces: formatting tokens, and texts that
 * Harmony encodes one by one with no special token recognised
 * (`encode_ordinary`).
 *
 * @module
 */
import { EngineError, RequestRejectedError } from "../common/errors.ts";
import { isJsonObject } from "../common/request.ts";
import {
  type Content,
  type DeveloperContent,
  type HarmonyMessage,
  harmonyMessages,
  type SystemContent,
} from "./messages.ts";
import { type ToolDescription, toolsSection } from "./schema.ts";

/** A piece of a render: a text, or a formatting token by its text. */
export type HarmonyPiece = string | { readonly token: string };

/** Options of {@linkcode renderHarmony}. */
export interface HarmonyRenderOptions {
  /** The conversation's start date, `YYYY-MM-DD` (vLLM's `VLLM_SYSTEM_START_DATE` or the server's today). */
  readonly date: string;
}

const EFFORTS: readonly string[] = ["low", "medium", "high"];

/** `SystemContent`'s default identity. */
export const MODEL_IDENTITY =
  "You are ChatGPT, a large language model trained by OpenAI.";

/**
 * Renders a chat payload (`messages`, `tools`, `tool_choice`,
 * `reasoning_effort`) as vLLM's chat path renders it for gpt-oss, ending on
 * `<|start|>assistant`.
 *
 * @param payload The request's fields.
 * @param options The conversation's start date.
 * @returns The pieces, in order.
 * @throws {RequestRejectedError} Where vLLM raises: a reasoning effort
 * Harmony lacks, a tool without a description, a `tool_choice` its
 * `check_tool_usage` refuses.
 * @throws {EngineError} For what cannot be mirrored.
 */
export function renderHarmony(
  payload: Readonly<Record<string, unknown>>,
  options: HarmonyRenderOptions,
): HarmonyPiece[] {
  const messages = payload.messages;
  if (!Array.isArray(messages)) {
    throw new EngineError(
      "Cannot count the request as 'messages' is not an array",
    );
  }
  const tools = payload.tools;
  checkToolChoice(payload.tool_choice, tools);
  const conversation: HarmonyMessage[] = [{
    role: "system",
    content: [harmonySystem(payload.reasoning_effort, options.date)],
  }];
  if (tools !== undefined && tools !== null) {
    if (!Array.isArray(tools) || tools.length === 0) {
      throw new RequestRejectedError();
    }
    const developer: DeveloperContent = {
      kind: "developer",
      functionTools: tools.map((tool) =>
        toolDescription(
          isJsonObject(tool) && (tool.type ?? "function") === "function"
            ? tool.function
            : undefined,
        )
      ),
    };
    conversation.push({ role: "developer", content: [developer] });
  }
  conversation.push(...harmonyMessages(messages));
  return renderForCompletion(conversation);
}

/**
 * `ChatCompletionRequest.check_tool_usage`: a `tool_choice` but `none` needs
 * tools, and a named one a tool of that name. The render does not read it:
 * vLLM's `--exclude-tools-when-tool-choice-none` is off by default.
 */
function checkToolChoice(choice: unknown, tools: unknown): void {
  if (choice === undefined || choice === null || choice === "none") return;
  if (!Array.isArray(tools)) throw new RequestRejectedError();
  if (choice === "auto" || choice === "required") return;
  const name = isJsonObject(choice) && isJsonObject(choice.function)
    ? choice.function.name
    : undefined;
  if (
    typeof name !== "string" || name === "" ||
    !tools.some((tool) =>
      isJsonObject(tool) && isJsonObject(tool.function) &&
      tool.function.name === name
    )
  ) throw new RequestRejectedError();
}

/**
 * `get_system_message`'s content: Harmony's defaults, the date, the effort
 * (unset: medium).
 *
 * @throws {RequestRejectedError} For an effort but low, medium, high.
 */
export function harmonySystem(
  effort: unknown,
  date: string,
  identity = MODEL_IDENTITY,
): SystemContent {
  if (
    effort !== undefined && effort !== null &&
    (typeof effort !== "string" || !EFFORTS.includes(effort))
  ) throw new RequestRejectedError();
  return {
    kind: "system",
    modelIdentity: identity,
    reasoningEffort: (effort ?? "medium") as SystemContent["reasoningEffort"],
    conversationStartDate: date,
    knowledgeCutoff: "2024-06",
    validChannels: ["analysis", "commentary", "final"],
  };
}

/**
 * `create_tool_definition`: a function as Harmony's `ToolDescription`.
 *
 * @throws {RequestRejectedError} Without a description (a `str` there) or
 * with parameters that are not an object.
 * @throws {EngineError} For a function without a name.
 */
export function toolDescription(fn: unknown): ToolDescription {
  if (!isJsonObject(fn) || typeof fn.name !== "string") {
    throw new EngineError(
      "Cannot count the request as a tool is not a function with a name",
    );
  }
  const parameters = fn.parameters ?? null;
  if (
    typeof fn.description !== "string" ||
    parameters !== null && !isJsonObject(parameters)
  ) throw new RequestRejectedError();
  return { name: fn.name, description: fn.description, parameters };
}

/**
 * `render_conversation_for_completion` with `auto_drop_analysis`: analysis
 * before the first final message goes when the last assistant message is
 * final; then each message, then `<|start|>assistant`.
 */
export function renderForCompletion(
  conversation: readonly HarmonyMessage[],
): HarmonyPiece[] {
  const functionTools = conversation.some((message) =>
    message.content.some((content) =>
      typeof content !== "string" && content.kind === "developer" &&
      (content.functionTools?.length ?? 0) > 0
    )
  );
  const lastAssistant = conversation.findLast((message) =>
    message.role === "assistant"
  );
  const drop = lastAssistant?.channel === "final";
  const firstFinal = conversation.findIndex((message) =>
    message.channel === "final"
  );
  const out: HarmonyPiece[] = [];
  conversation.forEach((message, index) => {
    if (
      drop && firstFinal >= 0 && index < firstFinal &&
      message.channel === "analysis"
    ) return;
    renderMessage(message, functionTools, out);
  });
  out.push({ token: "<|start|>" }, "assistant");
  return out;
}

function renderMessage(
  message: HarmonyMessage,
  functionTools: boolean,
  out: HarmonyPiece[],
): void {
  out.push({ token: "<|start|>" });
  if (message.role === "tool") {
    if (message.name === undefined) {
      throw new EngineError("Cannot render a tool message without a name");
    }
    out.push(message.name);
  } else {
    out.push(message.role);
    if (message.name !== undefined) out.push(`:${message.name}`);
  }
  if (message.recipient !== undefined && message.recipient !== "all") {
    out.push(` to=${message.recipient}`);
  }
  if (message.channel !== undefined) {
    out.push({ token: "<|channel|>" }, message.channel);
  }
  const type = message.contentType;
  if (type !== undefined) {
    if (type.startsWith("<|constrain|>")) {
      out.push(" ", { token: "<|constrain|>" });
      const rest = type.slice("<|constrain|>".length);
      if (rest !== "") out.push(rest);
    } else out.push(` ${type}`);
  }
  out.push({ token: "<|message|>" });
  for (const content of message.content) {
    out.push(contentText(content, message.role, functionTools));
  }
  out.push({
    token: message.role === "assistant" && message.recipient !== undefined
      ? "<|call|>"
      : "<|end|>",
  });
}

function contentText(
  content: Content,
  role: string,
  functionTools: boolean,
): string {
  if (typeof content === "string") return content;
  if (content.kind === "system") {
    if (role !== "system") throw new EngineError("Misplaced system content");
    return systemText(content, functionTools);
  }
  if (role !== "developer") {
    throw new EngineError("Misplaced developer content");
  }
  const sections = content.instructions === undefined
    ? []
    : ["# Instructions", content.instructions];
  const tools = content.functionTools;
  if (tools !== null && tools.length > 0) {
    sections.push(toolsSection("functions", tools));
  }
  return sections.join("\n\n");
}

/** `Render<SystemContent>`: identity, cutoff and date; effort; channels. */
function systemText(system: SystemContent, functionTools: boolean): string {
  const sections = [
    [
      system.modelIdentity,
      `Knowledge cutoff: ${system.knowledgeCutoff}`,
      `Current date: ${system.conversationStartDate}`,
    ].join("\n"),
    `Reasoning: ${system.reasoningEffort}`,
  ];
  let channels = `# Valid channels: ${
    system.validChannels.join(", ")
  }. Channel must be included for every message.`;
  if (functionTools) {
    channels +=
      "\nCalls to these tools must go to the commentary channel: 'functions'.";
  }
  sections.push(channels);
  return sections.join("\n\n");
}
