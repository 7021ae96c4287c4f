/**
 * A conversation, in whichever SDK's shape it comes, as the request a
 * backend counts: chat messages (OpenAI chat, and the AI SDK's and
 * LangChain.js's as their OpenAI providers send them), or a Responses
 * request for Responses input items.
 *
 * @module
 */
import type { JsonObject, RequestKind } from "../../core/request.ts";
import { aiSdkToChat, type Converted } from "./ai_sdk.ts";
import { langchainToChat } from "./langchain.ts";
import { type ConversationShape, conversationShape } from "./shape.ts";

export type { ConversationShape } from "./shape.ts";

/** What a host is about to send. */
export interface ConversationInput {
  readonly messages: readonly unknown[];
  readonly tools?: readonly unknown[];
  readonly system?: string;
}

/** The request to count for a conversation. */
export interface Conversation {
  readonly shape: ConversationShape;
  readonly kind: RequestKind;
  readonly request: JsonObject;
  /** Why the request is not exactly what the SDK sends, when it is not. */
  readonly inexact?: string;
}

/**
 * The request a conversation makes.
 *
 * @throws {TypeError} When `messages` is not an array, or its messages fit no shape.
 */
export function readConversation(
  input: ConversationInput,
  model: string | undefined,
): Conversation {
  const messages = input?.messages;
  if (!Array.isArray(messages)) {
    throw new TypeError(
      "Cannot count the conversation as 'messages' is not an array",
    );
  }
  const shape = conversationShape(messages);
  const named = model === undefined ? {} : { model };
  const tools = Array.isArray(input.tools) ? { tools: input.tools } : {};
  const system = typeof input.system === "string" ? input.system : undefined;
  if (shape === "responses") {
    return {
      shape,
      kind: "responses",
      request: {
        ...named,
        ...(system === undefined ? {} : { instructions: system }),
        input: messages,
        ...tools,
      } as JsonObject,
    };
  }
  const converted: Converted = shape === "ai-sdk"
    ? aiSdkToChat(messages)
    : shape === "langchain"
    ? langchainToChat(messages)
    : { messages: messages as JsonObject[] };
  return {
    shape,
    kind: "chat",
    request: {
      ...named,
      messages: [
        ...(system === undefined ? [] : [{ role: "system", content: system }]),
        ...converted.messages,
      ],
      ...tools,
    } as JsonObject,
    ...(converted.inexact === undefined ? {} : { inexact: converted.inexact }),
  };
}
