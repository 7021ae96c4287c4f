/**
 * The package version: one constant, which a test holds to `deno.json`.
 *
 * @module
 */

/**
 * The package version; a test keeps it equal to the `version` in
 * `deno.json`. The vLLM backend sends it in its default `User-Agent`.
 *
 * @example The default User-Agent of the vLLM backend
 * ```ts
 * import { VERSION } from "@incontext/incontext";
 * import { VllmBackend } from "@incontext/incontext/vllm";
 * import { createFakeVllmTokenizerHandler } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const fake = createFakeVllmTokenizerHandler();
 * const backend = new VllmBackend({ url: "http://fake.test/tokenize", fetch: fake.fetch, cache: null });
 * await backend.count({ messages: [] }, { contextLength: 65536 });
 * strictEqual(fake.requests[0]?.headers["user-agent"], `incontext/${VERSION}`);
 * ```
 */
export const VERSION = "0.1.0";
