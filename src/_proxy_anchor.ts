/** How the proxy turns usage anchors into prompt sizes. */
import type { JsonObject } from "./backend.ts";
import type { AnchorStore } from "./_anchors.ts";
import { roughEstimate } from "./estimate.ts";
import { effectiveField, isJsonObject } from "./_request.ts";

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
 * messages appended after. Undefined when no anchored conversation matches,
 * and for a conversation nested too deeply to hash; never throws for content.
 */
export function anchorEstimate(
  store: AnchorStore,
  request: JsonObject,
): number | undefined {
  const key = conversationKey(request);
  if (key === undefined) return undefined;
  let match;
  try {
    match = store.lookup(key.model, key.messages);
  } catch {
    // Content nested beyond the stack cannot be canonicalised: no anchor.
    return undefined;
  }
  if (match === undefined) return undefined;
  const { prefixLength, promptTokens, completionTokens } = match;
  if (prefixLength >= key.messages.length) return promptTokens;
  const next = key.messages[prefixLength];
  const replied = isJsonObject(next) && next.role === "assistant";
  const appended = key.messages.slice(prefixLength + (replied ? 1 : 0));
  return promptTokens + (replied ? completionTokens : 0) +
    (appended.length > 0 ? roughEstimate({ messages: appended }) : 0);
}
