/**
 * The request types of the Backend contract, and how a field is read as the
 * server reads it.
 *
 * @module
 */

/** A JSON request body in the OpenAI chat completions shape (or another shape a backend counts). */
export type JsonObject = { readonly [key: string]: unknown };

/** The cap fields incontext reads from a request, at the top level and in `extra_body`. */
export type CapField =
  | "max_tokens"
  | "max_completion_tokens"
  | "max_output_tokens";

/**
 * The shape of a request: OpenAI chat completions (`messages`), completions
 * (`prompt` string), or Responses (`instructions` + `input`).
 */
export type RequestKind = "chat" | "completion" | "responses";

/** Tells a JSON object from an array, `null` or a primitive. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Reads a request field as the server sees it: OpenAI SDKs merge
 * `extra_body` shallowly into the body, so its value wins over the top-level
 * one. `undefined` counts as absent, as JSON serialisation drops it.
 */
export function effectiveField(request: JsonObject, field: string): unknown {
  const extra = request.extra_body;
  if (
    isJsonObject(extra) && Object.hasOwn(extra, field) &&
    extra[field] !== undefined
  ) {
    return extra[field];
  }
  return Object.hasOwn(request, field) ? request[field] : undefined;
}

/** The longest model name a log line or page shows, in characters. */
export const MODEL_LABEL_CHARS = 100;

/**
 * The effective model name for logs and pages, or "unknown" when it is not
 * a string: a client chooses it, so it is cut to {@linkcode MODEL_LABEL_CHARS}
 * characters (an ellipsis marks the cut) and its control characters and
 * line separators are escaped (`\n` as `\u000a`), so that it can never
 * split a log record or forge one.
 */
export function modelLabel(request: unknown): string {
  if (!isJsonObject(request)) return "unknown";
  const model = effectiveField(request, "model");
  return typeof model === "string" ? safeLabel(model) : "unknown";
}

/** A client-chosen string made safe for a log line or a page; see {@linkcode modelLabel}. */
export function safeLabel(text: string): string {
  // Cut by code points, so that no surrogate pair is split.
  const points = Array.from(text.slice(0, MODEL_LABEL_CHARS * 2));
  const cut = points.length > MODEL_LABEL_CHARS ||
    text.length > MODEL_LABEL_CHARS * 2;
  const kept = cut ? points.slice(0, MODEL_LABEL_CHARS).join("") + "…" : text;
  return kept.replace(
    // deno-lint-ignore no-control-regex -- control characters are the point
    /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}
