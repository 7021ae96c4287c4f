/**
 * Recording a response's usage as a usage anchor, for HTTP clients of the
 * user's own.
 *
 * @module
 */
import type { JsonObject } from "../core/backend.ts";
import type { AnchorStore } from "./store.ts";
import { conversationKey } from "./keys.ts";
import { readUsage } from "./usage.ts";

/**
 * Records a chat request's response usage into `anchors`, under the key the
 * `AnchoredBackend` and the proxy look it up by (the model, the
 * tools and the messages as sent). For an HTTP client of your own; the proxy
 * and `budgetedFetch` (its `anchors` option) record by themselves.
 *
 * @param anchors The store to record into.
 * @param request The chat request body as sent.
 * @param response The parsed response body (or final stream chunk) holding
 * `usage.prompt_tokens` and `usage.completion_tokens`.
 * @returns Whether a usage was recorded: false for a response without valid
 * usage, a request without messages, or content nested too deeply to hash.
 *
 * @example Recording a response
 * ```ts
 * import { AnchorStore, recordResponseUsage } from "@incontext/incontext/anchored";
 * import { strictEqual } from "node:assert/strict";
 *
 * const anchors = new AnchorStore();
 * const request = { model: "m", messages: [{ role: "user", content: "Hi" }] };
 * strictEqual(recordResponseUsage(anchors, request, { usage: { prompt_tokens: 9, completion_tokens: 4 } }), true);
 * strictEqual(recordResponseUsage(anchors, request, { choices: [] }), false);
 * strictEqual(anchors.size, 1);
 * ```
 */
export function recordResponseUsage(
  anchors: AnchorStore,
  request: JsonObject,
  response: unknown,
): boolean {
  const usage = readUsage(response);
  const key = conversationKey(request);
  if (usage === undefined || key === undefined || key.messages.length === 0) {
    return false;
  }
  try {
    anchors.record(key.model, key.messages, usage);
    return true;
  } catch {
    // Content nested too deeply to canonicalise: no anchor, as in the proxy.
    return false;
  }
}
