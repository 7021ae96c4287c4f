/**
 * Agent histories in the AI SDK's and LangChain.js's own message shapes,
 * and the chat body each SDK's real OpenAI provider sends for them.
 */
import { generateText, type ModelMessage } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { ChatOpenAI } from "@langchain/openai";
import {
  AIMessage,
  type BaseMessage,
  ChatMessage,
  HumanMessage,
  SystemMessage,
  ToolMessage,
} from "@langchain/core/messages";

/** A chat completion any SDK accepts. */
function completion(): Response {
  return Response.json({
    id: "c",
    object: "chat.completion",
    created: 1,
    model: "m",
    choices: [{
      index: 0,
      message: { role: "assistant", content: "ok" },
      finish_reason: "stop",
    }],
  });
}

/** An agent's history, with every part the provider sends as text. */
export const AI_SDK_HISTORY: ModelMessage[] = [
  { role: "user", content: "Find the failing test." },
  {
    role: "assistant",
    content: [
      { type: "reasoning", text: "The log names it." },
      { type: "text", text: "Reading the log. " },
      { type: "text", text: "" },
      {
        type: "tool-call",
        toolCallId: "call_1",
        toolName: "read_file",
        input: { path: "log.txt" },
      },
    ],
  },
  {
    role: "tool",
    content: [{
      type: "tool-result",
      toolCallId: "call_1",
      toolName: "read_file",
      output: { type: "text", value: "FAIL: budget ".repeat(300) },
    }],
  },
  {
    role: "assistant",
    content: [
      {
        type: "tool-call",
        toolCallId: "call_2",
        toolName: "grep",
        input: { pattern: "budget", files: ["a.ts", "b.ts"] },
      },
      {
        type: "tool-call",
        toolCallId: "call_3",
        toolName: "run",
        input: '{"command":"deno test"}',
      },
    ],
  },
  {
    role: "tool",
    content: [
      {
        type: "tool-result",
        toolCallId: "call_2",
        toolName: "grep",
        output: { type: "json", value: { matches: 3, lines: [1, 2, 3] } },
      },
      {
        type: "tool-result",
        toolCallId: "call_3",
        toolName: "run",
        output: { type: "execution-denied" },
      },
    ],
  },
  {
    role: "user",
    content: [{ type: "text", text: "Fix it." }, { type: "text", text: "" }],
  },
  { role: "assistant", content: "Done." },
  {
    role: "user",
    content: [{ type: "text", text: "And?" }, {
      type: "text",
      text: "Explain.",
    }],
  },
];

/** The chat body the real provider sends for `messages` after `system`. */
export async function sentByAiSdk(
  system: string,
  messages: ModelMessage[],
): Promise<Record<string, unknown>> {
  let sent: Record<string, unknown> = {};
  const provider = createOpenAICompatible({
    name: "vllm",
    baseURL: "http://vllm.test/v1",
    fetch: (_input, init) => {
      sent = JSON.parse(String(init?.body));
      return Promise.resolve(completion());
    },
  });
  await generateText({ model: provider("m"), system, messages, maxRetries: 0 });
  return sent;
}

/** An agent's history in LangChain.js messages. */
export function langchainHistory(): BaseMessage[] {
  return [
    new SystemMessage("Be brief."),
    new HumanMessage("Find the failing test."),
    new AIMessage({
      content: "Reading the log.",
      tool_calls: [{
        id: "call_1",
        name: "read_file",
        args: { path: "log.txt" },
      }],
    }),
    new ToolMessage({
      content: "FAIL: budget ".repeat(300),
      tool_call_id: "call_1",
    }),
    new AIMessage({
      content: [
        { type: "reasoning", reasoning: "The cap." },
        { type: "text", text: "Found it." },
      ],
    }),
    new HumanMessage({
      content: [{ type: "text", text: "Fix it." }],
      name: "dev",
    }),
    new ChatMessage({ content: "Note this.", role: "developer" }),
  ];
}

/** The chat body the real ChatOpenAI sends for `messages`. */
export async function sentByLangChain(
  messages: BaseMessage[],
): Promise<Record<string, unknown>> {
  let sent: Record<string, unknown> = {};
  const model = new ChatOpenAI({
    model: "m",
    apiKey: "-",
    maxRetries: 0,
    configuration: {
      baseURL: "http://vllm.test/v1",
      fetch: (_input: RequestInfo | URL, init?: RequestInit) => {
        sent = JSON.parse(String(init?.body));
        return Promise.resolve(completion());
      },
    },
  });
  await model.invoke(messages);
  return sent;
}
