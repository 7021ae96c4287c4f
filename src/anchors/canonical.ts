/**
 * The canonical JSON of a chat message, under which two messages a server
 * renders alike are equal: the usage anchors compare conversations by it.
 *
 * @module
 */

/**
 * The canonical JSON of a message, equal for two messages a server renders
 * alike, so that an SDK that re-serialises an echoed message still matches:
 *
 * - object keys are sorted, at every depth;
 * - properties whose value is `null` or `undefined` are dropped, at every
 *   depth (`refusal: null`, `audio: null`, `content: null` next to tool calls);
 * - an empty `tool_calls` array is dropped;
 * - a tool call's `function.arguments` (also a legacy `function_call` and a
 *   Responses `function_call` item) that parses as JSON is replaced by the
 *   parsed value, so `{"a":1}` and `{"a": 1}` match; inside it only keys are
 *   sorted, since a `null` argument is the model's output; a value that
 *   parses to a string keeps its text, so `"\"x\""` and `"x"` stay apart;
 * - `content` made of a single `{type: "text", text}` part equals the string
 *   `text`;
 * - every other value is kept as it is.
 *
 * @param message A message (or Responses input item) as parsed from JSON.
 * @returns Its canonical JSON text.
 */
export function canonicalMessage(message: unknown): string {
  const flat = flatCanonical(message);
  if (flat !== undefined) return flat;
  const normalized = normalize(message);
  const copy = sortedCopy(normalized, true);
  if (copy === SLOW) return serialize(normalized, true);
  // JSON.stringify writes nothing for a lone function or undefined.
  return JSON.stringify(copy) ?? "null";
}

/**
 * {@linkcode canonicalMessage} by the general path alone, which the fast
 * path must always agree with (tests compare the two).
 */
export function canonicalMessageGeneral(message: unknown): string {
  return serialize(normalize(message), true);
}

/**
 * The canonical form of the commonest message, written with one copy instead
 * of two: a plain object whose values are all strings (or null or undefined,
 * dropped), such as `{role, content}` or a tool result. No message rule
 * changes such a message but the arguments of a Responses `function_call`
 * item, which goes the general way like every other shape (`undefined`).
 */
function flatCanonical(message: unknown): string | undefined {
  if (typeof message !== "object" || message === null) return undefined;
  const prototype = Object.getPrototypeOf(message);
  if (prototype !== Object.prototype && prototype !== null) return undefined;
  const object = message as Record<string, unknown>;
  const keys = Object.keys(object).sort();
  const copy: Record<string, unknown> = {};
  for (const key of keys) {
    // Keys the copy would reorder or not hold as data: see sortedCopy.
    const first = key.charCodeAt(0);
    if ((first >= 0x30 && first <= 0x39) || key === "__proto__") {
      return undefined;
    }
    const value = object[key];
    if (typeof value === "string") {
      if (key === "type" && value === "function_call") return undefined;
      copy[key] = value;
    } else if (value !== null && value !== undefined) {
      return undefined;
    }
  }
  return JSON.stringify(copy);
}

/** Marks a value {@linkcode sortedCopy} leaves to the general serialiser. */
const SLOW: unique symbol = Symbol("slow");

/**
 * The fast path of the canonical form: a copy with sorted keys and without
 * the dropped properties, which `JSON.stringify` then writes in one native
 * pass, several times faster than building the text piece by piece. It
 * writes exactly what {@linkcode serialize} writes, and gives up (`SLOW`)
 * wherever the two could differ: objects that are not plain, keys that an
 * object would reorder (array indices) or not hold as data (`__proto__`),
 * and values JSON cannot hold (bigint, symbol).
 */
function sortedCopy(value: unknown, dropNulls: boolean): unknown {
  if (value instanceof Parsed) return sortedCopy(value.value, false);
  if (typeof value !== "object" || value === null) {
    return typeof value === "bigint" || typeof value === "symbol"
      ? SLOW
      : value;
  }
  if (Array.isArray(value)) {
    const copy: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) {
      const item = sortedCopy(value[i], dropNulls);
      if (item === SLOW) return SLOW;
      copy[i] = item;
    }
    return copy;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return SLOW;
  const object = value as Record<string, unknown>;
  const keys = Object.keys(object);
  for (const key of keys) {
    const first = key.charCodeAt(0);
    if ((first >= 0x30 && first <= 0x39) || key === "__proto__") return SLOW;
  }
  keys.sort();
  const copy: Record<string, unknown> = {};
  for (const key of keys) {
    const item = object[key];
    if (item === undefined || typeof item === "function") continue;
    if (item === null && dropNulls) continue;
    const copied = sortedCopy(item, dropNulls);
    if (copied === SLOW) return SLOW;
    copy[key] = copied;
  }
  return copy;
}

/** A parsed JSON value whose nulls are data, not serialisation noise. */
class Parsed {
  readonly value: unknown;
  constructor(value: unknown) {
    this.value = value;
  }
}

/** Applies the message-level rules to a shallow copy; each property is read once. */
function normalize(message: unknown): unknown {
  if (!isObject(message)) return message;
  const keys = Object.keys(message);
  // With a parsed "__proto__" key, no prototype, so that the key stays an own
  // property of the copy (it would set the copy's prototype on a plain
  // object, hiding the key from the canonical form and lending its fields to
  // the message). Without one, a plain object: V8 keeps it in fast mode.
  const copy: Record<string, unknown> = keys.includes("__proto__")
    ? Object.create(null)
    : {};
  for (const key of keys) copy[key] = message[key];
  const calls = copy.tool_calls;
  if (Array.isArray(calls)) {
    if (calls.length === 0) delete copy.tool_calls;
    else copy.tool_calls = calls.map(withParsedFunction);
  }
  if (isObject(copy.function_call)) {
    copy.function_call = withParsedArguments(copy.function_call);
  }
  if (copy.type === "function_call") return withParsedArguments(copy);
  const text = singleText(copy.content);
  if (text !== undefined) copy.content = text;
  return copy;
}

function withParsedFunction(call: unknown): unknown {
  if (!isObject(call) || !isObject(call.function)) return call;
  return { ...call, function: withParsedArguments(call.function) };
}

function withParsedArguments(
  holder: Record<string, unknown>,
): Record<string, unknown> {
  const text = holder.arguments;
  if (typeof text !== "string") return holder;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // Arguments a model cut short or garbled are compared as text.
    return holder;
  }
  return typeof value === "string"
    ? holder
    : { ...holder, arguments: new Parsed(value) };
}

/** The text of content made of one text part, else `undefined`. */
function singleText(content: unknown): string | undefined {
  if (!Array.isArray(content) || content.length !== 1) return undefined;
  const part: unknown = content[0];
  if (!isObject(part) || part.type !== "text") return undefined;
  if (typeof part.text !== "string") return undefined;
  for (const key of Object.keys(part)) {
    if (key !== "type" && key !== "text" && part[key] != null) return undefined;
  }
  return part.text;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The general path: JSON text with sorted keys; `dropNulls` drops null-valued properties. */
function serialize(value: unknown, dropNulls: boolean): string {
  if (value instanceof Parsed) return serialize(value.value, false);
  if (Array.isArray(value)) {
    return `[${value.map((item) => serialize(item, dropNulls)).join(",")}]`;
  }
  if (isObject(value)) return serializeObject(value, dropNulls);
  if (
    typeof value === "string" || typeof value === "number" ||
    typeof value === "boolean"
  ) {
    return JSON.stringify(value);
  }
  // null, and what JSON cannot hold, which JSON.stringify also writes as null in arrays.
  return "null";
}

function serializeObject(
  value: Record<string, unknown>,
  dropNulls: boolean,
): string {
  const fields: string[] = [];
  for (const key of Object.keys(value).sort()) {
    const item = value[key];
    if (item === undefined || typeof item === "function") continue;
    if (item === null && dropNulls) continue;
    fields.push(`${JSON.stringify(key)}:${serialize(item, dropNulls)}`);
  }
  return `{${fields.join(",")}}`;
}
