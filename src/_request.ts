import type { JsonObject } from "./backend.ts";

/** True for a non-null, non-array object (what JSON.parse makes of `{}`). */
export function isPlainObject(
  value: unknown,
): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The value an OpenAI SDK would send for `key`: SDKs merge `extra_body`
 * shallowly into the body, so its value wins over the top-level one.
 */
export function effectiveValue(request: JsonObject, key: string): unknown {
  const extra = request.extra_body;
  if (isPlainObject(extra) && Object.hasOwn(extra, key)) return extra[key];
  return request[key];
}
