/**
 * `budgetMiddleware()`: budgets requests in any server built on Web
 * `Request`/`Response` (`Deno.serve`, Hono, oak), in front of the handler
 * or proxy that calls the model server.
 *
 * @example In front of a forwarding handler with Deno.serve
 * ```ts ignore
 * import { VllmBackend } from "@incontext/incontext/vllm";
 * import { budgetMiddleware } from "@incontext/incontext/middleware";
 *
 * const backend = new VllmBackend({ url: "http://127.0.0.1:8000/tokenize" });
 * const budgeted = budgetMiddleware({ window: 55705, contextLength: 65536, backend });
 * const forward = (request: Request) => {
 *   const url = new URL(request.url);
 *   return fetch(new Request(`http://127.0.0.1:8000${url.pathname}${url.search}`, request));
 * };
 * Deno.serve({ port: 8787 }, (request) => budgeted(request, forward));
 * ```
 *
 * @module
 */
import { validateBudgetOptions } from "../core/budget_settings.ts";
import { decide, withDecisionHeaders } from "./decision.ts";
import { endpointKind, isJsonContentType } from "./endpoints.ts";
import { errorResponse } from "./answers.ts";
import type { BridgeOptions } from "./options.ts";
import { requestIdOf } from "../_internal/request_id.ts";

/** The next handler: forwards a request and returns the upstream's response. */
export type Next = (request: Request) => Promise<Response>;

/** A middleware in the `(request, next)` shape that Hono and oak adapt to. */
export type BudgetMiddleware = (
  request: Request,
  next: Next,
) => Promise<Response>;

/**
 * Creates a middleware that budgets POSTs to chat completions, completions
 * and Responses endpoints with a JSON body, forwards them through `next`,
 * and marks the response with `x-incontext-action`, `x-incontext-source`,
 * `x-incontext-prompt-tokens` and `x-incontext-max-tokens`. A body that is
 * not a JSON object gets a 400 without calling `next`; every other request
 * goes to `next` as it is. Response bodies stream through unbuffered.
 *
 * @param options The window, context length, backend and policy.
 * @returns The middleware.
 * @throws {RangeError} When the options are invalid (checked once, here).
 *
 * @example Budgeting one request
 * ```ts
 * import { budgetMiddleware } from "@incontext/incontext/middleware";
 * import { FakeBackend } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const middleware = budgetMiddleware({
 *   window: 55705,
 *   contextLength: 65536,
 *   backend: new FakeBackend({ count: 5 }),
 * });
 * const response = await middleware(
 *   new Request("http://proxy.test/v1/chat/completions", {
 *     method: "POST",
 *     headers: { "content-type": "application/json" },
 *     body: JSON.stringify({ messages: [{ role: "user", content: "Hi" }] }),
 *   }),
 *   async (request) => Response.json(await request.json()),
 * );
 * strictEqual((await response.json()).max_tokens, 55700);
 * strictEqual(response.headers.get("x-incontext-action"), "set");
 * ```
 */
export function budgetMiddleware(options: BridgeOptions): BudgetMiddleware {
  validateBudgetOptions(options);
  return async function budgetMiddleware(request, next) {
    const kind = request.method === "POST"
      ? endpointKind(request.url)
      : undefined;
    if (
      kind === undefined || request.body === null ||
      !isJsonContentType(request.headers.get("content-type"))
    ) {
      return await next(request);
    }
    const bytes = new Uint8Array(await request.clone().arrayBuffer());
    const decision = await decide(bytes, {
      kind,
      bridge: options,
      signal: request.signal,
      request: {
        id: requestIdOf(request.headers.get("x-request-id")),
        url: request.url,
        headers: request.headers,
      },
    });
    switch (decision.kind) {
      case "malformed":
        return errorResponse(400, {
          code: "invalid_json",
          message: `Cannot budget the request as ${decision.reason}`,
        });
      case "reject":
        return decision.response;
      case "send": {
        const forwarded = decision.body === undefined
          ? request
          : rewritten(request, decision.body);
        return withDecisionHeaders(await next(forwarded), decision.headers);
      }
    }
  };
}

function rewritten(request: Request, body: string): Request {
  const headers = new Headers(request.headers);
  headers.delete("content-length");
  return new Request(request, { body, headers });
}
