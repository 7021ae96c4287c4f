/**
 * What a bridge (budgetedFetch, budgetMiddleware, the proxy) does with one
 * request body: read it as JSON without altering its bytes, budget it,
 * apply the policy for an exhausted window, and say so in headers. The
 * answer is one {@linkcode Decision}, which carries everything its
 * consumer needs.
 *
 * @module
 */
import type { JsonObject, RequestKind } from "../core/request.ts";
import { budget, type BudgetResult } from "../core/budget.ts";
import type { BridgeOptions, DecisionRequest } from "./options.ts";
import { isJsonObject } from "../core/request.ts";
import { contextLengthExceeded } from "./answers.ts";
import { applyPolicy } from "./policy.ts";
import { holdsUnsafeNumber, numbersSurviveRewrite } from "./number_safety.ts";
import { getLogger } from "@logtape/logtape";
import { jsonText } from "../_internal/json_bytes.ts";
import { parseJson, stringifyJson } from "@incontext/engine/vllm";
import type { GrownBodies } from "./grown_bodies.ts";
import { errorType } from "../core/error_type.ts";

const logger = getLogger(["incontext", "bridge"]);

/** The `x-incontext-*` headers that tell a client what happened, as name/value pairs. */
export type DecisionHeaders = readonly [string, string][];

/** The body is not a JSON object: nothing was budgeted. */
export interface Malformed {
  readonly kind: "malformed";
  /** Why, fit for the client: "the body is not valid JSON". */
  readonly reason: string;
}

/** Less than the minimum output is left and the policy refuses: answer without the upstream. */
export interface Rejected {
  readonly kind: "reject";
  readonly result: BudgetResult;
  /** The 400 to answer, with the decision headers. */
  readonly response: Response;
  readonly headers: DecisionHeaders;
}

/** Send the request on: rewritten, or as its original bytes. */
export interface Sending {
  readonly kind: "send";
  readonly result: BudgetResult;
  /** The request as it will be sent: the rewritten object, or the parsed original. */
  readonly sent: JsonObject;
  /** A rewritten body to send instead of the original bytes, or `undefined` for the bytes as they came. */
  readonly body: string | undefined;
  /** The cap the sent request carries, when incontext wrote one. */
  readonly maxTokens: number | undefined;
  readonly headers: DecisionHeaders;
}

/** What a bridge does with one request body. */
export type Decision = Malformed | Rejected | Sending;

/** Options for {@linkcode decide}. */
export interface DecideOptions {
  /** The kind of the endpoint the body was sent to. */
  readonly kind: RequestKind;
  readonly bridge: BridgeOptions;
  /** Aborts the count; the rough estimate is used instead. */
  readonly signal?: AbortSignal | undefined;
  /**
   * The request the body came with, for `onDecision`.
   *
   * @default a new id, no URL, no headers
   */
  readonly request?: DecisionRequest;
  /**
   * Recent bodies' parses, for a body that grew from one of them to parse
   * its new text only.
   *
   * @default none: each body is parsed whole
   */
  readonly bodies?: GrownBodies;
}

/**
 * Budgets one body, read as Python's `json.loads` reads bytes. What Python
 * cannot decode, invalid JSON and non-objects are `malformed` (re-encoding
 * them would alter bytes); budget() itself never throws for content, so
 * neither does this.
 */
export async function decide(
  bytes: Uint8Array,
  options: DecideOptions,
): Promise<Decision> {
  const { kind, bridge, signal } = options;
  // Read as the server reads it: a byte order mark, UTF-16 and UTF-32,
  // surrogates spelled alone, NaN and the infinities too.
  const decoded = jsonText(bytes);
  if (decoded === undefined) return malformed("the body is not valid UTF-8");
  let read: ReadBody;
  try {
    read = {
      ...decoded,
      ...(options.bodies?.parse(decoded.text) ?? parseJson(decoded.text)),
    };
  } catch {
    return malformed("the body is not valid JSON");
  }
  const { value: parsed } = read;
  if (!isJsonObject(parsed)) return malformed("the body is not a JSON object");
  const result = await budget(parsed, {
    ...bridge,
    kind,
    ...(signal ? { signal } : {}),
  });
  const decision = exhaust(parsed, result, bridge);
  const final = decision.kind === "send"
    ? serialized(decision, parsed, read, options.bodies)
    : decision;
  try {
    bridge.onDecision?.(
      final.result,
      kind,
      options.request ??
        { id: crypto.randomUUID(), url: "", headers: new Headers() },
    );
  } catch (error) {
    // An observer's failure must not change what is sent. Only its type is
    // logged: its message could quote the request it was shown.
    logger.warn(
      "The onDecision callback threw ({errorType}); the request went on",
      { errorType: errorType(error) },
    );
  }
  return final;
}

/** A body as read: its text, its value, and what of it JSON.stringify cannot write again. */
interface ReadBody {
  readonly text: string;
  readonly value: unknown;
  readonly constants: boolean;
  readonly loneSurrogates: boolean;
}

function malformed(reason: string): Malformed {
  return { kind: "malformed", reason };
}

function sending(
  result: BudgetResult,
  sent: JsonObject,
  maxTokens?: number,
): Sending {
  return {
    kind: "send",
    result,
    sent,
    body: undefined,
    maxTokens,
    headers: decisionHeaders(result, maxTokens),
  };
}

/** What the policy makes of budget()'s answer: send it, clamp it, or refuse it. */
function exhaust(
  request: JsonObject,
  result: BudgetResult,
  options: BridgeOptions,
): Sending | Rejected {
  const outcome = applyPolicy(result, options.onExhausted);
  if (outcome.send === "as-is") return sending(result, request);
  if (outcome.send === "cap") {
    if (result.action === "set") {
      return sending(result, result.request, outcome.maxTokens);
    }
    const { field } = result;
    let sent: JsonObject;
    try {
      if (!field) throw new TypeError("no field");
      sent = options.backend.writeCap(request, field, outcome.maxTokens);
      if (!isJsonObject(sent)) throw new TypeError("not an object");
    } catch {
      // A failing hook leaves the request as it came (fail-open).
      return sending(result, request);
    }
    return sending(result, sent, outcome.maxTokens);
  }
  const headers = decisionHeaders(result, undefined);
  const response = withDecisionHeaders(
    contextLengthExceeded(result, options),
    headers,
  );
  return { kind: "reject", result, response, headers };
}

/**
 * Gives a rewritten request its body, unless writing it again would alter
 * more than its cap or cannot be done: then the original bytes go on
 * unbudgeted, and the decision says so.
 */
function serialized(
  decision: Sending,
  request: JsonObject,
  read: ReadBody,
  bodies: GrownBodies | undefined,
): Sending {
  const { result, sent } = decision;
  // The caller's cap was the budget already, or nothing was written: the
  // bytes go on as they came instead of being written again.
  if (sent === request || sameFields(sent, request)) return decision;
  if (read.loneSurrogates) {
    return keepBytes(
      request,
      result,
      "the body spells surrogates alone in its bytes, which a JavaScript string can join",
    );
  }
  const unsafe = bodies === undefined
    ? holdsUnsafeNumber(request)
    : bodies.holdsUnsafeNumber(request);
  if (unsafe && !numbersSurviveRewrite(read.text)) {
    return keepBytes(
      request,
      result,
      "the body holds a number JavaScript cannot hold exactly (an integer beyond 2^53 or a value beyond a double)",
    );
  }
  try {
    // NaN and the infinities are written as Python reads them, not as null.
    const body = read.constants ? stringifyJson(sent) : JSON.stringify(sent);
    return { ...decision, body };
  } catch (error) {
    // V8 serialises deep nesting recursively once a copy has lost its fast
    // shape (a deleted cap): 10,000 levels parse, yet overflow the stack here.
    return keepBytes(
      request,
      result,
      error instanceof RangeError
        ? "the body is nested too deeply to write again"
        : "the body cannot be written again as it came",
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
): Sending {
  logger.warn("request left unchanged as {why}: source={source}", {
    why,
    source: result.source,
  });
  const { maxTokens: _, field: __, ...rest } = result;
  return sending({
    ...rest,
    action: "unchanged",
    request,
    reason: `${result.source}: left unchanged as ${why}`,
  }, request);
}

/** The `x-incontext-*` headers of a budget answer and the cap sent. */
function decisionHeaders(
  result: BudgetResult,
  maxTokens: number | undefined,
): DecisionHeaders {
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
  // Why a request went on unbudgeted (another model, a failed count): the
  // reason holds counts and labels, never request content.
  if (result.action === "unchanged") {
    headers.push([
      "x-incontext-reason",
      result.reason.replace(/[^\x20-\x7e]/g, "_").slice(0, 300),
    ]);
  }
  return headers;
}

/** Copies the response with `headers` set on it; the body streams through. */
export function withDecisionHeaders(
  response: Response,
  headers: DecisionHeaders,
): Response {
  const copied = new Headers(response.headers);
  for (const [name, value] of headers) copied.set(name, value);
  return new Response(response.body, {
    status: response.status,
    statusText: response.statusText,
    headers: copied,
  });
}
