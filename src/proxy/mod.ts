/**
 * The budgeting proxy as a Web handler: an OpenAI-compatible reverse proxy
 * in front of any upstream (vLLM, llama.cpp, SGLang, TGI, a hosted API). It
 * budgets `POST /v1/chat/completions`, `/v1/completions` and
 * `/v1/responses`, streams every response through untouched, learns usage
 * anchors from responses, and serves a status page at `/incontext/`,
 * `/incontext/livez`, `/incontext/readyz` (alias `/incontext/healthz`),
 * `/incontext/metrics` and `/incontext/context`. Serve it with any server
 * that speaks `Request`/`Response` (`Deno.serve`, Node adapters, Hono).
 *
 * @example Serving it with Deno
 * ```ts ignore
 * import { VllmBackend } from "@incontext/incontext/vllm";
 * import { createProxyHandler } from "@incontext/incontext/proxy";
 *
 * const backend = new VllmBackend({ url: "http://127.0.0.1:8000/tokenize" });
 * const proxy = createProxyHandler({
 *   upstream: "http://127.0.0.1:8000",
 *   window: 55705,
 *   contextLength: 65536,
 *   backend,
 * });
 * Deno.serve({ hostname: "127.0.0.1", port: 8787 }, proxy);
 * ```
 *
 * @module
 */
export { createProxyHandler } from "./handler.ts";
export {
  BackendChain,
  type BackendChainOptions,
} from "../core/backend_chain.ts";
export {
  createExactFetch,
  type ExactFetch,
  type ExactFetchOptions,
} from "./exact_fetch.ts";
export type {
  LiveBudget,
  ProxyHandler,
  ProxyOptions,
  ProxyReporter,
  ProxyRequestInfo,
} from "./options.ts";
export {
  Readiness,
  type ReadinessOptions,
  type ReadinessProbe,
  type TokenizerReadiness,
} from "./readiness.ts";
