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

/** The effective model name for logs: a string of at most 200 characters, else "unknown". */
export function modelLabel(request: unknown): string {
  if (!isJsonObject(request)) return "unknown";
  const model = effectiveField(request, "model");
  return typeof model === "string" ? model.slice(0, 200) : "unknown";
}
