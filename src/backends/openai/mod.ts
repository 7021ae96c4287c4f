/**
 * Counts OpenAI prompts: Responses requests exactly with OpenAI's
 * `POST /v1/responses/input_tokens`; Chat Completions requests, which have
 * no count endpoint, with a local estimate in the model's encoding
 * (labelled an estimate, so budget() keeps a margin for it).
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
export { CountError } from "../../core/errors.ts";
// The types OpenAIBackend's API names, so that this entry stands on its own.
export type * from "../_shared/entry_types.ts";
