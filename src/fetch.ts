/**
 * `budgetedFetch()`: one line gives any fetch-based SDK exact output
 * budgets. Chat completions, completions and Responses POSTs with a JSON
 * body are budgeted on their way out; everything else passes untouched.
 *
 * @example With the openai SDK
 * ```ts ignore
 * import OpenAI from "openai";
 * import { VllmBackend } from "@incontext/incontext";
 * import { budgetedFetch } from "@incontext/incontext/fetch";
 *
 * const backend = new VllmBackend({ url: "http://127.0.0.1:8000/tokenize" });
 * const client = new OpenAI({
 *   baseURL: "http://127.0.0.1:8000/v1",
 *   apiKey: "-",
 *   fetch: budgetedFetch(fetch, { window: 55705, contextLength: 65536, backend }),
 * });
 * ```
 *
 * @module
 */
import { validateBudgetOptions } from "./budget.ts";
import { decide, endpointKind, isJsonContentType } from "./_bridge.ts";
import type { BridgeOptions } from "./bridge_options.ts";

export type { BridgeOptions, ExhaustedPolicy } from "./bridge_options.ts";
// The types BridgeOptions names, so that this entry stands on its own.
export type {
  Backend,
  CapField,
  CountOptions,
  JsonObject,
  OutputFieldOptions,
  OutputLimitOptions,
  RequestKind,
} from "./backend.ts";
export type {
  BudgetOptions,
  BudgetResult,
  BudgetRoute,
  BudgetTarget,
} from "./budget.ts";
export type { Estimator } from "./estimate.ts";

/**
 * Wraps a fetch so that every POST to a chat completions, completions or
 * Responses endpoint with a JSON body is budgeted: its output cap becomes
 * min(caller's cap, W - exact prompt tokens). When less than the minimum is
 * left, `onExhausted` decides (default `"clamp"`: the largest cap the server
 * accepts; `"reject"`: a 400 `context_length_exceeded` answer without a call,
 * so the host compresses; `"unchanged"`). Every other request, and every body
 * that is not a JSON object, is passed to `fetch` untouched, byte for byte.
 * It never throws because of a request's content.
 *
 * @param fetch The fetch to wrap, such as `globalThis.fetch`.
 * @param options The window, context length, backend and policy.
 * @returns A fetch with the same signature.
 * @throws {RangeError} When the options are invalid (checked once, here).
 *
 * @example Budgeting a chat completion
 * ```ts
 * import { budgetedFetch } from "@incontext/incontext/fetch";
 * import { FakeBackend } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * let sent = "";
 * const upstream = async (_input: RequestInfo | URL, init?: RequestInit) => {
 *   sent = String(init?.body);
 *   return new Response("{}");
 * };
 * const fetch = budgetedFetch(upstream, {
 *   window: 55705,
 *   contextLength: 65536,
 *   backend: new FakeBackend({ count: 1705 }),
 * });
 * await fetch("http://127.0.0.1:8000/v1/chat/completions", {
 *   method: "POST",
 *   headers: { "content-type": "application/json" },
 *   body: JSON.stringify({ model: "m", max_tokens: 65536, messages: [] }),
 * });
 * strictEqual(JSON.parse(sent).max_tokens, 54000);
 * ```
 */
export function budgetedFetch(
  fetch: typeof globalThis.fetch,
  options: BridgeOptions,
): typeof globalThis.fetch {
  validateBudgetOptions(options);
  return async function budgetedFetch(input, init) {
    const request = input instanceof Request ? input : undefined;
    const method = (init?.method ?? request?.method ?? "GET").toUpperCase();
    const url = request?.url ?? String(input);
    const kind = method === "POST" ? endpointKind(url) : undefined;
    const headers = new Headers(init?.headers ?? request?.headers);
    if (kind === undefined || !isJsonContentType(headers.get("content-type"))) {
      return fetch(input, init);
    }
    const bytes = await readBody(request, init);
    if (bytes === undefined) return fetch(input, init);
    const signal = init?.signal ?? request?.signal;
    const decision = await decide(bytes, kind, options, signal ?? undefined);
    if (decision.reject) return decision.reject;
    if (decision.body === undefined) return fetch(input, init);
    // The new body has another length; fetch computes it.
    headers.delete("content-length");
    if (request !== undefined && init?.body === undefined) {
      return fetch(
        new Request(request, { ...init, body: decision.body, headers }),
      );
    }
    return fetch(input, { ...init, headers, body: decision.body });
  };
}

/**
 * The body's bytes when they can be read without consuming what will be
 * forwarded: a string or buffer in `init`, or a clone of a Request's body.
 * Streams, forms and blobs come back undefined and pass untouched.
 */
async function readBody(
  request: Request | undefined,
  init: RequestInit | undefined,
): Promise<Uint8Array | undefined> {
  const body = init?.body;
  if (typeof body === "string") return new TextEncoder().encode(body);
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) {
    return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  }
  if (body !== undefined && body !== null) return undefined;
  if (request === undefined || request.body === null) return undefined;
  return new Uint8Array(await request.clone().arrayBuffer());
}
