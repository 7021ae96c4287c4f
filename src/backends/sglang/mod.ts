/**
 * Counts prompt tokens exactly with an SGLang server's `POST /tokenize`.
 * SGLang tokenizes text only, so chat requests are first rendered with the
 * model folder's chat template, as the local backend renders them.
 *
 * The `Backend` contract it implements and the errors its counts throw
 * (`CountError`, `TemplateRejectedError`) are the root entry's, `@incontext/incontext`;
 * `BackendConfig`, which its factory reads, and `ConfigError`, which it
 * throws for a missing setting, are `@incontext/incontext/config`'s.
 *
 * @example Counting a chat request
 * ```ts
 * import { SglangBackend } from "@incontext/incontext/sglang";
 * import { createFakeSglangHandler } from "@incontext/incontext/testing";
 * import { ok } from "node:assert/strict";
 *
 * const dir = new URL("../../../tests/fixtures/model_folder/", import.meta.url).pathname;
 * const fake = createFakeSglangHandler();
 * const backend = new SglangBackend({ url: "http://fake.test", dir, fetch: fake.fetch, cache: null });
 * const request = { messages: [{ role: "user", content: "Hello" }] };
 * ok(await backend.count(request, { contextLength: 8192 }) > 0);
 * await backend[Symbol.asyncDispose]();
 * ```
 *
 * @module
 */
export { SglangBackend, sglangFromConfig } from "./sglang_backend.ts";
export type {
  SglangBackendOptions,
  SglangOutputLimitOptions,
} from "./sglang_backend.ts";
// The options it shares with the other HTTP backends, which its options extend.
export type { HttpCountOptions } from "../_shared/http_count_options.ts";
