/**
 * What the HTTP bridges (budgetedFetch, budgetMiddleware, the proxy) share:
 * which endpoints are budgeted, how a JSON body is read without altering its
 * bytes, and what happens when less than the minimum output is left.
 */
import type { JsonObject, RequestKind } from "./backend.ts";
import { budget, type BudgetResult } from "./budget.ts";
import type { BridgeOptions } from "./bridge_options.ts";
import { writeCap } from "./_caps.ts";
import { isJsonObject } from "./_request.ts";

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
  let path: string;
  try {
    path = new URL(url).pathname.replace(/\/+$/, "");
  } catch {
    return undefined;
  }
  return ENDPOINTS.find(([suffix]) => path.endsWith(suffix))?.[1];
}

/** True for `application/json` and `application/*+json`, with or without parameters. */
export function isJsonContentType(value: string | null): boolean {
  if (value === null) return false;
  const type = value.split(";")[0]!.trim().toLowerCase();
  return type === "application/json" ||
    (type.startsWith("application/") && type.endsWith("+json"));
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

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
  let parsed: unknown;
  try {
    parsed = JSON.parse(strictUtf8.decode(bytes));
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
  try {
    options.onDecision?.(result, kind);
  } catch {
    // An observer's failure must not change what is sent.
  }
  return exhaust(parsed, result, options);
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
      body: JSON.stringify(result.request),
      ...(maxTokens === undefined ? {} : { maxTokens }),
    };
  }
  const policy = options.onExhausted ?? "clamp";
  if (result.action !== "compress" || policy === "unchanged") {
    return { result, sent: request };
  }
  const { hardLimitTokens: hard, field } = result;
  if (policy === "clamp" && hard !== undefined && hard >= 2 && field) {
    const sent = writeCap(request, field, hard);
    return { result, sent, body: JSON.stringify(sent), maxTokens: hard };
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
