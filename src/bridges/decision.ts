/**
 * What the HTTP bridges (budgetedFetch, budgetMiddleware, the proxy) share:
 * which endpoints are budgeted, how a JSON body is read without altering its
 * bytes, and what happens when less than the minimum output is left.
 */
import type { JsonObject, RequestKind } from "../core/backend.ts";
import { budget, type BudgetResult } from "../core/budget.ts";
import type { BridgeOptions } from "./options.ts";
import { isJsonObject } from "../core/request.ts";
import { getLogger } from "@logtape/logtape";
import { isUtf8 } from "node:buffer";

const logger = getLogger(["incontext", "bridge"]);

/** What a bridge does with one request body. */
export interface Decision {
  /** The budget decision, when the body was budgeted. */
  readonly result?: BudgetResult;
  /** A rewritten body to send instead of the original bytes. */
  readonly body?: string;
  /** The cap the rewritten body carries. */
  readonly maxTokens?: number;
  /** The request as it will be sent: the rewritten object, or the parsed original. */
  readonly sent?: JsonObject;
  /** An answer to give without calling the upstream. */
  readonly reject?: Response;
  /** Why the body is not a JSON object, when it is not. */
  readonly malformed?: string;
}

const ENDPOINTS: readonly [string, RequestKind][] = [
  ["/chat/completions", "chat"],
  ["/completions", "completion"],
  ["/responses", "responses"],
];

/** The kind of a budgeted endpoint (`.../chat/completions`, `.../completions`, `.../responses`), else undefined. */
export function endpointKind(url: string): RequestKind | undefined {
  let pathname: string;
  try {
    pathname = new URL(url).pathname;
  } catch {
    return undefined;
  }
  return pathKind(pathname);
}

/** {@linkcode endpointKind} of a URL's path, for a caller that parsed the URL already. */
export function pathKind(pathname: string): RequestKind | undefined {
  const path = pathname.replace(/\/+$/, "");
  return ENDPOINTS.find(([suffix]) => path.endsWith(suffix))?.[1];
}

/** True for `application/json` and `application/*+json`, with or without parameters. */
export function isJsonContentType(value: string | null): boolean {
  if (value === null) return false;
  const type = value.split(";")[0]!.trim().toLowerCase();
  return type === "application/json" ||
    (type.startsWith("application/") && type.endsWith("+json"));
}

// Validating first and then decoding leniently is several times faster than
// a fatal decoder, which checks as it decodes (Deno and Node alike); both
// read valid UTF-8 the same, and a BOM stays in the text (it is not JSON).
const utf8 = new TextDecoder("utf-8", { ignoreBOM: true });

/**
 * Budgets one body. Invalid UTF-8, invalid JSON and non-objects come back as
 * `malformed` (re-encoding them would alter bytes); budget() itself never
 * throws for content, so neither does this.
 */
export async function decide(
  bytes: Uint8Array,
  kind: RequestKind,
  options: BridgeOptions,
  signal?: AbortSignal,
): Promise<Decision> {
  let text: string;
  let parsed: unknown;
  if (!isUtf8(bytes)) return { malformed: "the body is not valid UTF-8" };
  try {
    text = utf8.decode(bytes);
    parsed = JSON.parse(text);
  } catch (error) {
    return {
      malformed: error instanceof SyntaxError
        ? "the body is not valid JSON"
        : "the body is not valid UTF-8",
    };
  }
  if (!isJsonObject(parsed)) {
    return { malformed: "the body is not a JSON object" };
  }
  const result = await budget(parsed, {
    ...options,
    kind,
    ...(signal ? { signal } : {}),
  });
  const decision = serialized(exhaust(parsed, result, options), parsed, text);
  try {
    options.onDecision?.(decision.result ?? result, kind);
  } catch {
    // An observer's failure must not change what is sent.
  }
  return decision;
}

/**
 * Gives a rewritten request its body, unless writing it again would alter
 * more than its cap or cannot be done: then the original bytes go on
 * unbudgeted, and the decision says so.
 */
function serialized(
  decision: Decision,
  request: JsonObject,
  text: string,
): Decision {
  const { result, sent } = decision;
  if (result === undefined || sent === undefined || sent === request) {
    return decision;
  }
  // The caller's cap was the budget already: the rewrite holds the same
  // fields, so the bytes go on as they came instead of being written again.
  if (sameFields(sent, request)) return decision;
  if (holdsUnsafeNumber(request) && !numbersSurviveRewrite(text)) {
    return keepBytes(
      request,
      result,
      "the body holds a number JavaScript cannot hold exactly (an integer beyond 2^53 or a value beyond a double)",
    );
  }
  try {
    return { ...decision, body: JSON.stringify(sent) };
  } catch {
    // V8 serialises deep nesting recursively once a copy has lost its fast
    // shape (a deleted cap): 10,000 levels parse, yet overflow the stack here.
    return keepBytes(
      request,
      result,
      "the body is nested too deeply to write again",
    );
  }
}

/** Whether two objects hold the same values (by identity) under the same keys. */
function sameFields(a: JsonObject, b: JsonObject): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) {
    if (!Object.hasOwn(b, key) || a[key] !== b[key]) return false;
  }
  return true;
}

/** The decision to send the body as it came, unbudgeted, and why. */
function keepBytes(
  request: JsonObject,
  result: BudgetResult,
  why: string,
): Decision {
  logger.warn("request left unchanged as {why}: source={source}", {
    why,
    source: result.source,
  });
  const { maxTokens: _, field: __, ...rest } = result;
  return {
    result: {
      ...rest,
      action: "unchanged",
      request,
      reason: `${result.source}: left unchanged as ${why}`,
    },
    sent: request,
  };
}

/**
 * Whether a parsed value holds a number its literal may not have meant: an
 * infinity (a literal beyond a double) or an integer beyond 2^53. Walking
 * the parsed values costs far less than scanning the text, which only these
 * rare bodies need.
 */
function holdsUnsafeNumber(value: unknown): boolean {
  // A stack, not recursion: the body may nest deeper than the call stack.
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === "number") {
      if (!Number.isFinite(item) || Math.abs(item) > Number.MAX_SAFE_INTEGER) {
        return true;
      }
    } else if (typeof item === "object" && item !== null) {
      for (const child of Object.values(item)) {
        if (typeof child === "object" || typeof child === "number") {
          stack.push(child);
        }
      }
    }
  }
  return false;
}

const NUMBER = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/**
 * Whether `text` survives `JSON.parse` + `JSON.stringify` with every number's
 * value intact, as a server in Python or Go reads it. JavaScript numbers are
 * doubles: an integer beyond 2^53 (a 64-bit `seed`) comes back as another
 * integer, and a literal beyond a double (`1e400`) as `null`. Floats in range
 * are safe: the server reads both spellings as the same double.
 *
 * @param text A valid JSON text.
 */
export function numbersSurviveRewrite(text: string): boolean {
  // A scan, not a regular expression over strings: V8 runs out of stack on
  // long strings of escapes. Strings are skipped with indexOf.
  for (let i = 0; i < text.length;) {
    const code = text.charCodeAt(i);
    if (code === 0x22) {
      i = stringEnd(text, i + 1);
    } else if (code === 0x2d || (code >= 0x30 && code <= 0x39)) {
      NUMBER.lastIndex = i;
      const literal = NUMBER.exec(text)?.[0] ?? text[i]!;
      if (!numberSurvives(literal)) return false;
      i += literal.length;
    } else i++;
  }
  return true;
}

/** The index after the quote that closes the string whose body starts at `from`. */
function stringEnd(text: string, from: number): number {
  for (let i = from;;) {
    const quote = text.indexOf('"', i);
    if (quote === -1) return text.length;
    let slashes = 0;
    while (text.charCodeAt(quote - 1 - slashes) === 0x5c) slashes++;
    if (slashes % 2 === 0) return quote + 1;
    i = quote + 1;
  }
}

function numberSurvives(literal: string): boolean {
  const value = Number(literal);
  if (/[.eE]/.test(literal)) return Number.isFinite(value);
  return JSON.stringify(value) === literal || literal === "-0";
}

function exhaust(
  request: JsonObject,
  result: BudgetResult,
  options: BridgeOptions,
): Decision {
  if (result.action === "set") {
    const { maxTokens } = result;
    return {
      result,
      sent: result.request,
      ...(maxTokens === undefined ? {} : { maxTokens }),
    };
  }
  const policy = options.onExhausted ?? "clamp";
  if (result.action !== "compress" || policy === "unchanged") {
    return { result, sent: request };
  }
  const { hardLimitTokens: hard, field } = result;
  if (policy === "clamp" && hard !== undefined && hard >= 2 && field) {
    let sent: JsonObject;
    try {
      sent = options.backend.writeCap(request, field, hard);
      if (!isJsonObject(sent)) throw new TypeError("not an object");
    } catch {
      // A failing hook leaves the request as it came (fail-open).
      return { result, sent: request };
    }
    return { result, sent, maxTokens: hard };
  }
  return { result, reject: contextLengthExceeded(result, options) };
}

/**
 * A 400 in OpenAI's shape that makes Hermes and OpenAI-style clients
 * compress and retry: "prompt is too long" / "reduce the length of the
 * messages", code `context_length_exceeded`. It never quotes a context
 * length below the real one, and none of the output-cap phrasings
 * ("requested N output tokens", "available_tokens", "Range of max_tokens")
 * that hosts treat differently.
 */
export function contextLengthExceeded(
  result: BudgetResult,
  options: Pick<BridgeOptions, "window" | "contextLength">,
): Response {
  const message =
    `The prompt is too long: its ${result.promptTokens} tokens leave fewer than ${result.requiredTokens} tokens to generate below the compression window of ${options.window} tokens (context length ${options.contextLength}). Please reduce the length of the messages.`;
  return Response.json({
    error: {
      message,
      type: "invalid_request_error",
      param: "messages",
      code: "context_length_exceeded",
    },
  }, { status: 400 });
}

/** An error answer in OpenAI's shape, with a message fit for the client. */
export function errorResponse(
  status: number,
  code: string,
  message: string,
  type = "invalid_request_error",
): Response {
  return Response.json({ error: { message, type, param: null, code } }, {
    status,
  });
}

/** Copies the response with the decision headers; the body streams through. */
export function withDecisionHeaders(
  response: Response,
  decision: Decision,
): Response {
  const added = decisionHeaders(decision);
  if (added.length === 0) return response;
  const headers = new Headers(response.headers);
  for (const [name, value] of added) headers.set(name, value);
  return new Response(response.body, {
    status: response.status,
    statusText: response.statusText,
    headers,
  });
}

/** The `x-incontext-*` headers that tell a client what happened. */
export function decisionHeaders(decision: Decision): [string, string][] {
  const { result, maxTokens } = decision;
  if (result === undefined) return [];
  const headers: [string, string][] = [
    ["x-incontext-action", result.action],
    // A third-party source label could hold characters a header cannot.
    ["x-incontext-source", result.source.replace(/[^\x21-\x7e]/g, "_")],
  ];
  if (result.promptTokens !== undefined) {
    headers.push(["x-incontext-prompt-tokens", String(result.promptTokens)]);
  }
  if (maxTokens !== undefined) {
    headers.push(["x-incontext-max-tokens", String(maxTokens)]);
  }
  return headers;
}
