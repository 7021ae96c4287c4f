/**
 * `budgetedFetch()`: one line gives any fetch-based SDK exact output
 * budgets. Chat completions, completions and Responses POSTs with a JSON
 * body are budgeted on their way out; everything else passes untouched.
 *
 * @example With the openai SDK
 * ```ts ignore
 * import OpenAI from "openai";
 * import { VllmBackend } from "@incontext/incontext/vllm";
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
import { validateBudgetOptions } from "../core/budget_settings.ts";
import {
  decide,
  type DecisionHeaders,
  withDecisionHeaders,
} from "./decision.ts";
import { requestIdOf } from "../_internal/request_id.ts";
import { endpointKind, isJsonContentType } from "./endpoints.ts";
import type { JsonObject } from "../core/request.ts";
import type { BridgeOptions } from "./options.ts";
import type { RequestKind } from "../core/backend.ts";
import { AnchorStore } from "../anchors/store.ts";
import { anchorEstimate, anchorKeys } from "../anchors/keys.ts";
import { tapUsage } from "../anchors/usage.ts";

// The options of every HTTP bridge (this one, budgetMiddleware, the AI SDK's
// middleware, the proxy): their home is this entry.
export type {
  BridgeOptions,
  DecisionRequest,
  ExhaustedPolicy,
} from "./options.ts";

/** Options for {@linkcode budgetedFetch}: the bridge options, and a usage anchor store. */
export interface BudgetedFetchOptions extends BridgeOptions {
  /**
   * Records the `usage` of every successful chat completion into this store
   * (from a JSON body, or from the final chunk of a stream sent with
   * `stream_options.include_usage`), as the proxy does, and uses it as the
   * `anchor` when the backend's count fails. Pass the store of an
   * `AnchoredBackend` to count from the usage the provider reports.
   *
   * @default undefined: no usage is recorded
   */
  readonly anchors?: AnchorStore;
  /**
   * Puts the decision on each budgeted response, as the proxy does:
   * `x-incontext-action`, `x-incontext-source`, `x-incontext-prompt-tokens`,
   * `x-incontext-max-tokens` (when a cap was written), `x-incontext-reason`
   * (when unchanged), and `x-incontext-request-id`, the id `onDecision` was
   * given. SDKs hand response headers to the host (the AI SDK as
   * `response.headers`, the `openai` SDK through `.withResponse()`).
   *
   * @default false: the server's response as it came
   */
  readonly decisionHeaders?: boolean;
}

/**
 * Wraps a fetch so that every POST to a chat completions, completions or
 * Responses endpoint with a JSON body is budgeted: its output cap becomes
 * min(caller's cap, W - exact prompt tokens). When less than the minimum is
 * left, `onExhausted` decides (default `"clamp"`: min(caller's cap, R) while
 * the context length still holds it, else the overflow answer; `"reject"`: a
 * 400 `context_length_exceeded` answer without a call, so the host
 * compresses; `"unchanged"`). Every other request, and every body
 * that is not a JSON object, is passed to `fetch` untouched, byte for byte.
 * It never throws because of a request's content. The responses are the
 * server's own, without `x-incontext-*` headers unless `decisionHeaders` is
 * set (the overflow 400 it answers itself always carries them);
 * `onDecision` sees each decision with the request's id.
 *
 * @param fetch The fetch to wrap, such as `globalThis.fetch`.
 * @param options The window, context length, backend, policy and anchor store.
 * @returns A fetch with the same signature.
 * @throws {RangeError} When the options are invalid (checked once, here).
 * @throws {TypeError} When `anchors` is not an AnchorStore.
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
 *
 * @example Recording usage for the anchored backend
 * ```ts
 * import { AnchoredBackend, AnchorStore } from "@incontext/incontext/anchored";
 * import { budgetedFetch } from "@incontext/incontext/fetch";
 * import { createFakeUpstreamHandler } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const anchors = new AnchorStore();
 * const upstream = createFakeUpstreamHandler();
 * const fetch = budgetedFetch(upstream.fetch, {
 *   window: 55705,
 *   contextLength: 65536,
 *   backend: new AnchoredBackend({ anchors }),
 *   anchors,
 * });
 * const response = await fetch("http://upstream.test/v1/chat/completions", {
 *   method: "POST",
 *   headers: { "content-type": "application/json" },
 *   body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "Hi" }] }),
 * });
 * await response.json(); // the usage is recorded once the body is read
 * strictEqual(anchors.size, 1);
 * ```
 */
export function budgetedFetch(
  fetch: typeof globalThis.fetch,
  options: BudgetedFetchOptions,
): typeof globalThis.fetch {
  validateBudgetOptions(options);
  const { anchors } = options;
  if (anchors !== undefined && !(anchors instanceof AnchorStore)) {
    throw new TypeError(
      "Cannot create the budgeted fetch as 'anchors' must be an AnchorStore",
    );
  }
  const bridge: BridgeOptions = anchors === undefined || options.anchor
    ? options
    : { ...options, anchor: (parsed) => anchorEstimate(anchors, parsed) };
  const send = anchors === undefined
    ? (_sent: Sent, response: Promise<Response>) => response
    : (sent: Sent, response: Promise<Response>) =>
      recording(response, { anchors, ...sent });
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
    const id = requestIdOf(headers.get("x-request-id"));
    const decision = await decide(bytes, {
      kind,
      bridge,
      signal: signal ?? undefined,
      request: { id, url, headers },
    });
    // A malformed body goes on as it came: the server answers it.
    if (decision.kind === "malformed") return fetch(input, init);
    const marked: DecisionHeaders = [
      ...decision.headers,
      ["x-incontext-request-id", id],
    ];
    if (decision.kind === "reject") {
      return withDecisionHeaders(decision.response, marked);
    }
    const sent = { kind, request: decision.sent };
    const response = send(sent, forward(input, init, decision.body));
    return options.decisionHeaders
      ? withDecisionHeaders(await response, marked)
      : response;
  };

  /** The call with the decided body, or as it came when the bytes stand. */
  function forward(
    input: RequestInfo | URL,
    init: RequestInit | undefined,
    body: string | undefined,
  ): Promise<Response> {
    if (body === undefined) return fetch(input, init);
    const request = input instanceof Request ? input : undefined;
    // The new body has another length; fetch computes it.
    const headers = new Headers(init?.headers ?? request?.headers);
    headers.delete("content-length");
    if (request !== undefined && init?.body === undefined) {
      return fetch(new Request(request, { ...init, body, headers }));
    }
    return fetch(input, { ...init, headers, body });
  }
}

/**
 * The response, its body tapped for `usage` when it answers a chat request:
 * the usage is recorded under the conversation as sent once the body has
 * been read to its end, and the bytes reach the caller as they came.
 */
async function recording(
  pending: Promise<Response>,
  { anchors, kind, request }: Sent & { readonly anchors: AnchorStore },
): Promise<Response> {
  const response = await pending;
  const conversation = kind === "chat"
    ? anchorKeys(anchors, request)
    : undefined;
  if (conversation === undefined || !response.ok || response.body === null) {
    return response;
  }
  const { keys } = conversation;
  const body = tapUsage(
    response.body,
    response.headers.get("content-type"),
    (usage) => anchors.recordKeys(keys, usage),
  );
  if (body === response.body) return response;
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

/** A request as sent, and its endpoint's kind. */
interface Sent {
  readonly kind: RequestKind;
  readonly request: JsonObject;
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
