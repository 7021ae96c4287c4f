/**
 * Counts prompt tokens exactly, in process, from a model folder's tokenizer
 * files and chat template: what vLLM's `POST /tokenize` would answer for the
 * same request, without the round trip. With a count cache (the default),
 * the files load and the counts run inside the cache's worker thread.
 *
 * The `Backend` contract it implements and the errors its counts throw
 * (`CountError`, `TemplateRejectedError`) are the root entry's, `@incontext/incontext`;
 * `BackendConfig`, which its factory reads, and `ConfigError`, which it
 * throws for a missing setting, are `@incontext/incontext/config`'s.
 *
 * @example Counting a chat request from a model folder
 * ```ts
 * import { LocalBackend } from "@incontext/incontext/local";
 * import { ok } from "node:assert/strict";
 *
 * const dir = new URL("../../../tests/fixtures/model_folder/", import.meta.url).pathname;
 * const backend = new LocalBackend({ dir, cache: null });
 * const request = { messages: [{ role: "user", content: "hi there" }] };
 * ok(await backend.count(request, { contextLength: 8192 }) > 0);
 * await backend[Symbol.asyncDispose]();
 * ```
 *
 * @module
 */
export { LocalBackend, localFromConfig } from "./local_backend.ts";
export type { LocalBackendOptions } from "./local_backend.ts";
