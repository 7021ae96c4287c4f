/**
 * The request shapes the engine reads: JSON objects as a server parses
 * them, the three request kinds, and the cap fields.
 *
 * @module
 */

/** A JSON object as parsed from a request body. */
export type JsonObject = { readonly [key: string]: unknown };

/** The kind of request: a chat completion, a completion, or a Responses request. */
export type RequestKind = "chat" | "completion" | "responses";

/** The cap fields of a request, at the top level and in `extra_body`. */
export type CapField =
  | "max_tokens"
  | "max_completion_tokens"
  | "max_output_tokens";

/** Tells a JSON object from an array, `null` or a primitive. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Reads a request field as the server sees it: OpenAI SDKs merge
 * `extra_body` shallowly into the body, so its value wins over the
 * top-level one.
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
