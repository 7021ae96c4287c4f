import type { JsonObject } from "./backend.ts";

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
