/**
 * A request's kind (chat, completion, Responses) from its shape, and whether
 * it can be budgeted.
 *
 * @module
 */
import {
  effectiveField,
  isJsonObject,
  type JsonObject,
  type RequestKind,
} from "./request.ts";

/**
 * The kind a request's shape says it is: `messages` (an array) is chat, a
 * `prompt` string is a completion, an `input` string or array is Responses.
 * `undefined` for anything else. `extra_body` values win, as SDKs send them.
 */
export function detectKind(request: JsonObject): RequestKind | undefined {
  if (Array.isArray(effectiveField(request, "messages"))) return "chat";
  if (typeof effectiveField(request, "prompt") === "string") {
    return "completion";
  }
  const input = effectiveField(request, "input");
  if (typeof input === "string" || Array.isArray(input)) return "responses";
  return undefined;
}

/**
 * The kind `request` is budgeted as (`kind` when given, else its detected
 * kind), or why it cannot be budgeted. `detect` reads the shape once.
 */
export function requestShape(
  request: unknown,
  kind: RequestKind | undefined,
  detect: (request: JsonObject) => RequestKind | undefined = detectKind,
): { readonly kind: RequestKind } | { readonly problem: string } {
  if (!isJsonObject(request)) return { problem: "not a JSON object" };
  const extra = request.extra_body;
  if (extra !== undefined && extra !== null && !isJsonObject(extra)) {
    return { problem: "extra_body is not an object" };
  }
  const detected = detect(request);
  if (detected === undefined) {
    return { problem: "no messages array, prompt string or input to count" };
  }
  if (kind !== undefined && detected !== kind) {
    return { problem: `a ${kind} request needs ${SHAPE[kind]}` };
  }
  return { kind: detected };
}

const SHAPE: Record<RequestKind, string> = {
  chat: "a messages array",
  completion: "a prompt string",
  responses: "an input string or array",
};
