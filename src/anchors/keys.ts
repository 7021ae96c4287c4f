/**
 * How usage anchors become prompt sizes: a chat request's anchor keys, and
 * the estimate an anchor gives.
 *
 * @module
 */
import type { CountResult, JsonObject } from "../core/backend.ts";
import type { AnchorStore, ConversationKeys } from "./store.ts";
import { roughEstimate } from "../core/estimate.ts";
import { effectiveField, isJsonObject } from "../core/request.ts";

/** The anchor key of a chat request: its model and tools, and its messages. */
export interface ConversationKey {
  /** The model, with the tools folded in: a change of tools changes every count. */
  readonly model: string;
  readonly messages: readonly unknown[];
}

/** The key of a chat request as sent, or undefined for other shapes. */
export function conversationKey(
  request: JsonObject,
): ConversationKey | undefined {
  const messages = effectiveField(request, "messages");
  if (!Array.isArray(messages)) return undefined;
  const model = effectiveField(request, "model");
  const tools = effectiveField(request, "tools");
  return {
    model: `${typeof model === "string" ? model : ""}\n${
      JSON.stringify(tools ?? null)
    }`,
    messages,
  };
}

/**
 * The prompt size a usage anchor implies for `request` (Hermes' rule): the
 * anchored turn's prompt tokens, plus its completion tokens when the next
 * message is that turn's assistant reply, plus a rough estimate of the
 * messages appended after, that estimate being the count's estimated part
 * (budget() keeps its margin on it). Undefined when no anchored conversation
 * matches, and for a conversation nested too deeply to hash; never throws for
 * content.
 */
export function anchorEstimate(
  store: AnchorStore,
  request: JsonObject,
): CountResult | undefined {
  const conversation = anchorKeys(store, request);
  return conversation && anchorFromKeys(store, conversation);
}

/** A chat request's messages and their conversation keys. */
export interface AnchorKeys {
  readonly messages: readonly unknown[];
  readonly keys: ConversationKeys;
}

/**
 * The prefix keys of a chat request, computed once so that the proxy can both
 * look up and later record its conversation. Undefined for other shapes, and
 * for content nested too deeply to canonicalise (no anchor then).
 */
export function anchorKeys(
  store: AnchorStore,
  request: JsonObject,
): AnchorKeys | undefined {
  const key = conversationKey(request);
  if (key === undefined || key.messages.length === 0) return undefined;
  try {
    return {
      messages: key.messages,
      keys: store.keys(key.model, key.messages),
    };
  } catch {
    return undefined;
  }
}

/** {@linkcode anchorEstimate} from keys computed already. */
export function anchorFromKeys(
  store: AnchorStore,
  conversation: AnchorKeys,
): CountResult | undefined {
  const parts = anchorParts(store, conversation);
  if (parts === undefined) return undefined;
  const { anchoredTokens, appended } = parts;
  const estimated = appended.length > 0
    ? roughEstimate({ messages: appended })
    : 0;
  return {
    tokens: anchoredTokens + estimated,
    estimatedTokens: estimated,
  };
}

/** What a usage anchor covers of a conversation, and what it leaves to count. */
export interface AnchorParts {
  /** The anchored turn's prompt tokens, plus its completion tokens when its reply follows. */
  readonly anchoredTokens: number;
  /** The messages after the anchored prefix (and its reply): only these need counting. */
  readonly appended: readonly unknown[];
}

/**
 * Splits a conversation at the longest anchored prefix (Hermes' rule): the
 * anchored turn's prompt tokens, plus its completion tokens when the next
 * message is that turn's assistant reply, and the messages appended after.
 * Undefined when no anchored conversation matches.
 */
export function anchorParts(
  store: AnchorStore,
  conversation: AnchorKeys,
): AnchorParts | undefined {
  const { messages, keys } = conversation;
  const match = store.lookupKeys(keys);
  if (match === undefined) return undefined;
  const { prefixLength, promptTokens, completionTokens } = match;
  if (prefixLength >= messages.length) {
    return { anchoredTokens: promptTokens, appended: [] };
  }
  const next = messages[prefixLength];
  const replied = isJsonObject(next) && next.role === "assistant";
  return {
    anchoredTokens: promptTokens + (replied ? completionTokens : 0),
    appended: messages.slice(prefixLength + (replied ? 1 : 0)),
  };
}
