/**
 * Counts OpenAI prompts: Responses requests exactly with OpenAI's
 * `POST /v1/responses/input_tokens`; Chat Completions requests, which have
 * no count endpoint, with a local estimate in the model's encoding
 * (labelled an estimate, so budget() keeps a margin for it).
 *
 * The encodings come from the npm package `gpt-tokenizer`, loaded on the
 * first chat count. Deno resolves it itself; installed from npm, where it is
 * an optional peer that only this estimate uses, add it to your project:
 * `npm install gpt-tokenizer@4.0.0`. Without it, each chat count fails with
 * a `CountError` that says so, and budget() falls back.
 *
 * The `Backend` contract it implements and the errors its counts throw
 * (`CountError`) are the root entry's, `@incontext/incontext`;
 * `BackendConfig`, which its factory reads, is `@incontext/incontext/config`'s.
 *
 * @example Counting a Responses request
 * ```ts
 * import { OpenAIBackend } from "@incontext/incontext/openai";
 * import { createFakeOpenAIHandler } from "@incontext/incontext/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const fake = createFakeOpenAIHandler({ countTokens: () => 42 });
 * const backend = new OpenAIBackend({ url: "http://fake.test", fetch: fake.fetch, cache: null });
 * const request = { model: "gpt-4.1", input: "Hello" };
 * deepStrictEqual(await backend.count(request, { contextLength: 1047576, kind: "responses" }), {
 *   tokens: 42,
 *   estimatedTokens: 0,
 * });
 * ```
 *
 * @module
 */
export { OpenAIBackend, openAIFromConfig } from "./openai_backend.ts";
export type { OpenAIBackendOptions } from "./openai_backend.ts";
// The options it shares with the other HTTP backends, which its options extend.
export type { HttpCountOptions } from "../_shared/http_count_options.ts";
