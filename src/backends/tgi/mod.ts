/**
 * Counts prompt tokens exactly with a Hugging Face text-generation-inference
 * (TGI) server: `POST /chat_tokenize` renders and tokenizes a chat request
 * as the server's chat endpoint would, and `GET /info` gives its limits.
 *
 * @example Counting a chat request
 * ```ts
 * import { TgiBackend } from "@incontext/incontext/tgi";
 * import { createFakeTgiHandler } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const fake = createFakeTgiHandler({ maxTotalTokens: 8192 });
 * // Production code keeps the default, process-wide count cache.
 * const backend = new TgiBackend({ url: "http://127.0.0.1:3000", fetch: fake.fetch, cache: null });
 * const request = { messages: [{ role: "user", content: "Hello" }] };
 * strictEqual(await backend.count(request, { contextLength: 8192 }), 10);
 * ```
 *
 * @module
 */
export { TgiBackend, tgiFromConfig } from "./tgi_backend.ts";
export type { TgiBackendOptions } from "./tgi_backend.ts";
export { CountError, TemplateRejectedError } from "../../core/errors.ts";
export { ConfigError } from "../../core/config_error.ts";
// The types TgiBackend's API names, so that this entry stands on its own.
export type * from "../_shared/entry_types.ts";
