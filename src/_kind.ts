import type { JsonObject, RequestKind } from "./backend.ts";
import { effectiveField, isJsonObject } from "./_request.ts";

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
 * Why `request` cannot be budgeted as `kind` (or as its detected kind when
 * none is given), or undefined when it can.
 */
export function shapeProblem(
  request: unknown,
  kind: RequestKind | undefined,
  detect: (request: JsonObject) => RequestKind | undefined = detectKind,
): string | undefined {
  if (!isJsonObject(request)) return "not a JSON object";
  const extra = request.extra_body;
  if (extra !== undefined && extra !== null && !isJsonObject(extra)) {
    return "extra_body is not an object";
  }
  const detected = detect(request);
  if (detected === undefined) {
    return "no messages array, prompt string or input to count";
  }
  if (kind !== undefined && detected !== kind) {
    return `a ${kind} request needs ${SHAPE[kind]}`;
  }
  return undefined;
}

const SHAPE: Record<RequestKind, string> = {
  chat: "a messages array",
  completion: "a prompt string",
  responses: "an input string or array",
};
