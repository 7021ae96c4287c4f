/**
 * Usage-anchored counting for OpenAI-compatible providers that cannot count
 * a prompt before it is sent (Ollama, hosted gateways), as Hermes Agent does
 * since its PR #97206: the last response's `usage` of a conversation says
 * exactly what its prompt and reply cost, so only the messages appended
 * since need counting. The proxy (or `budgetedFetch`) records each
 * response's usage into an {@linkcode AnchorStore}; the
 * {@linkcode AnchoredBackend} reads the same store.
 *
 * The store is this entry's: `budgetedFetch` and the proxy take it as their
 * `anchors` option. The `Backend` contract and the errors its counts throw
 * (`CountError`, `TemplateRejectedError`) are the root entry's,
 * `@incontext/incontext`; `BackendConfig` is `@incontext/incontext/config`'s.
 *
 * @example Sharing one store between the proxy and the backend
 * ```ts
 * import { AnchoredBackend, AnchorStore } from "@incontext/incontext/anchored";
 * import { createProxyHandler } from "@incontext/incontext/proxy";
 * import { createFakeUpstreamHandler } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const anchors = new AnchorStore();
 * const upstream = createFakeUpstreamHandler({ maxModelLen: 65536 });
 * const proxy = createProxyHandler({
 *   upstream: "http://upstream.test",
 *   window: 55705,
 *   contextLength: 65536,
 *   backend: new AnchoredBackend({ anchors }),
 *   anchors,
 *   fetch: upstream.fetch,
 * });
 * const post = (messages: unknown[]) =>
 *   proxy(new Request("http://proxy.test/v1/chat/completions", {
 *     method: "POST",
 *     headers: { "content-type": "application/json" },
 *     body: JSON.stringify({ model: "m", messages }),
 *   }));
 * const turn1 = [{ role: "user", content: "Hello" }];
 * const first = await (await post(turn1)).json();
 * strictEqual(anchors.size, 1);
 * const turn2 = [...turn1, first.choices[0].message, { role: "user", content: "More" }];
 * const second = await post(turn2);
 * strictEqual(second.headers.get("x-incontext-source"), "usage-anchor");
 * // Exact up to the last reply; "More" is estimated at 1 token.
 * strictEqual(
 *   Number(second.headers.get("x-incontext-prompt-tokens")),
 *   first.usage.prompt_tokens + first.usage.completion_tokens + 1,
 * );
 * await second.body?.cancel();
 * ```
 *
 * @module
 */
export { AnchoredBackend, anchoredFromConfig } from "./anchored_backend.ts";
export type { AnchoredBackendOptions } from "./anchored_backend.ts";
export { AnchorStore } from "../../anchors/store.ts";
export { recordResponseUsage } from "../../anchors/record_usage.ts";
export type {
  AnchorMatch,
  AnchorStoreOptions,
  ConversationKeys,
} from "../../anchors/store.ts";
export type { Usage } from "../../anchors/usage.ts";
