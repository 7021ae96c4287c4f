/**
 * The server's `--default-chat-template-kwargs` under a request's
 * `chat_template_kwargs`, merged as vLLM main merges them
 * (`merge_kwargs` of `vllm/renderers/params.py`, applied by
 * `ChatParams.with_defaults` on the chat and `/tokenize` paths alike).
 *
 * @module
 */
import { isJsonObject } from "../common/request.ts";

/**
 * Python's `defaults | overrides` without the overrides whose value is
 * `None` or `"auto"`: vLLM treats those as unset, so a default shows through.
 *
 * @param defaults The server's defaults.
 * @param overrides The request's values.
 * @returns A new object; neither argument changes.
 */
export function mergeKwargs(
  defaults: Readonly<Record<string, unknown>>,
  overrides: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...defaults };
  for (const [key, value] of Object.entries(overrides)) {
    if (value !== null && value !== undefined && value !== "auto") {
      merged[key] = value;
    }
  }
  return merged;
}

/**
 * A `/tokenize` chat body as vLLM's renderer sees it: its
 * `chat_template_kwargs` merged over the server's defaults. vLLM merges on
 * every request (its own `tools` and `tokenize` are always among the
 * defaults), so a request's `None` or `"auto"` value is dropped even without
 * server defaults. A body whose `chat_template_kwargs` is not an object
 * comes back as it is, for the preprocessing to refuse.
 *
 * @param payload The body, never mutated.
 * @param defaults The server's `--default-chat-template-kwargs`.
 * @returns The body with the merged `chat_template_kwargs`.
 */
export function withDefaultKwargs(
  payload: Record<string, unknown>,
  defaults: Readonly<Record<string, unknown>> = {},
): Record<string, unknown> {
  const given = payload.chat_template_kwargs ?? {};
  if (!isJsonObject(given)) return payload;
  return { ...payload, chat_template_kwargs: mergeKwargs(defaults, given) };
}
