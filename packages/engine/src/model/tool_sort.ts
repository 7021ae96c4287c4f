/**
 * The step a remote tokenizer class runs on the tools before its chat
 * template: Kimi K2's `deep_sort_dict` (`tokenization_kimi.py`'s
 * `apply_chat_template`), applied after vLLM's preprocessing of the tools.
 *
 * @module
 */
import { PyFloat } from "../jinja/values.ts";

/**
 * Kimi's `deep_sort_dict`: every mapping's keys in Python's string order
 * (code points), lists kept in order. Mappings come back as `Map`s, which
 * keep that order where a plain object would put integer-like keys first.
 *
 * @example Sort a tool schema
 * ```ts
 * import { deepSortDict } from "./tool_sort.ts";
 * const sorted = deepSortDict({ type: "function", function: { name: "f" } });
 * console.assert([...(sorted as Map<string, unknown>).keys()].join() === "function,type");
 * ```
 *
 * @param value A JSON value.
 * @returns The value, sorted.
 */
export function deepSortDict(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(deepSortDict);
  const entries = value instanceof Map
    ? [...value]
    : isPlainObject(value)
    ? Object.entries(value)
    : undefined;
  if (entries === undefined) return value;
  entries.sort(([a], [b]) => comparePoints(String(a), String(b)));
  return new Map(entries.map(([key, inner]) => [key, deepSortDict(inner)]));
}

/** Python's `str` order: by code point, where JavaScript compares UTF-16 units. */
function comparePoints(a: string, b: string): number {
  const x = [...a], y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

/** A JSON object: not an array, a `Map`, or an instance of a class (a template's float). */
/** A JSON object: not an array, a `Map`, or a template's float. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null &&
    !Array.isArray(value) && !(value instanceof Map) &&
    !(value instanceof PyFloat);
}
