/**
 * Counts prompt tokens exactly with a Hugging Face text-generation-inference
 * (TGI) server: `POST /chat_tokenize` renders and tokenizes a chat request
 * as the server's chat endpoint would, and `GET /info` gives its limits.
 *
 * The `Backend` contract it implements and the errors its counts throw
 * (`CountError`, `TemplateRejectedError`) are the root entry's, `@incontext/incontext`;
 * `BackendConfig`, which its factory reads, and `ConfigError`, which it
 * throws for a missing setting, are `@incontext/incontext/config`'s.
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
// The options it shares with the other HTTP backends, which its options extend.
export type { HttpCountOptions } from "../_shared/http_count_options.ts";
