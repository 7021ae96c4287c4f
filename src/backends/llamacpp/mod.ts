/**
 * Counts prompt tokens exactly with a llama.cpp server (`llama-server`): it
 * renders the request with the served chat template (`POST /apply-template`)
 * and tokenizes the result (`POST /tokenize`), so the count is what the
 * server's own chat endpoint would see.
 *
 * The `Backend` contract it implements and the errors its counts throw
 * (`CountError`, `TemplateRejectedError`) are the root entry's, `@incontext/incontext`;
 * `BackendConfig`, which its factory reads, and `ConfigError`, which it
 * throws for a missing setting, are `@incontext/incontext/config`'s.
 *
 * @example Counting a chat request
 * ```ts
 * import { LlamaCppBackend } from "@incontext/incontext/llamacpp";
 * import { createFakeLlamaCppHandler } from "@incontext/incontext/testing";
 * import { ok } from "node:assert/strict";
 *
 * const fake = createFakeLlamaCppHandler({ nCtx: 8192 });
 * // Production code keeps the default, process-wide count cache.
 * const backend = new LlamaCppBackend({ url: "http://127.0.0.1:8080", fetch: fake.fetch, cache: null });
 * const request = { messages: [{ role: "user", content: "Hello" }] };
 * ok(await backend.count(request, { contextLength: 8192 }) > 0);
 * ```
 *
 * @module
 */
export { LlamaCppBackend, llamaCppFromConfig } from "./llamacpp_backend.ts";
export type { LlamaCppBackendOptions } from "./llamacpp_backend.ts";
// The options it shares with the other HTTP backends, which its options extend.
export type { HttpCountOptions } from "../_shared/http_count_options.ts";
