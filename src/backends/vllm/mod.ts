/**
 * Counts prompt tokens exactly with a vLLM server's `POST /tokenize`
 * endpoint, which applies the served chat template to the request's
 * messages and tools.
 *
 * The `Backend` contract it implements and the errors its counts throw
 * (`CountError`, `TemplateRejectedError`) are the root entry's, `@incontext/incontext`;
 * `BackendConfig`, which its factory reads, and `ConfigError`, which it
 * throws for a missing setting, are `@incontext/incontext/config`'s.
 *
 * @example Counting a chat request
 * ```ts
 * import { VllmBackend } from "@incontext/incontext/vllm";
 * import { serveFakeVllmTokenizer } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * await using server = await serveFakeVllmTokenizer({ maxModelLen: 8192, countTokens: () => 42 });
 * // Production code keeps the default, process-wide count cache.
 * const backend = new VllmBackend({ url: server.url, cache: null });
 * const request = { model: "qwen3", messages: [{ role: "user", content: "Hello" }] };
 * strictEqual(await backend.count(request, { contextLength: 8192 }), 42);
 * ```
 *
 * @module
 */
export { VllmBackend, vllmFromConfig } from "./vllm_backend.ts";
export type { VllmBackendOptions } from "./vllm_backend.ts";
// The options it shares with the other HTTP backends, which its options extend.
export type { HttpCountOptions } from "../_shared/http_count_options.ts";
