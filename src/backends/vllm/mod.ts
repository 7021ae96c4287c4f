/**
 * Counts prompt tokens exactly with a vLLM server's `POST /tokenize`
 * endpoint, which applies the served chat template to the request's
 * messages and tools.
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
export { CountError, TemplateRejectedError } from "../../core/errors.ts";
export { ConfigError } from "../../core/config_error.ts";
// The types VllmBackend's API names, so that this entry stands on its own.
export type * from "../_shared/entry_types.ts";
