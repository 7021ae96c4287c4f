/**
 * Counts prompt tokens exactly with an SGLang server's `POST /tokenize`.
 * SGLang tokenizes text only, so chat requests are first rendered with the
 * model folder's chat template, as the local backend renders them.
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
export { CountError, TemplateRejectedError } from "../../core/errors.ts";
export { ConfigError } from "../../core/config_error.ts";
// The types SglangBackend's API names, so that this entry stands on its own.
export type * from "../_shared/entry_types.ts";
export type { FilesSha256 } from "@incontext/engine";
