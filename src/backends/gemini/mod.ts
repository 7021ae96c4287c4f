/**
 * Counts prompt tokens with Gemini's `POST models/{model}:countTokens`,
 * sending a `generateContentRequest` so that the system instruction and the
 * tools count too.
 *
 * @example Counting a Gemini-shaped request
 * ```ts
 * import { GeminiBackend } from "@incontext/incontext/gemini";
 * import { createFakeGeminiHandler } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const fake = createFakeGeminiHandler({ countTokens: () => 42 });
 * // Production code keeps the default, process-wide count cache.
 * const backend = new GeminiBackend({ apiKey: "AIza-example", model: "gemini-2.5-flash", fetch: fake.fetch, cache: null });
 * const request = { contents: [{ role: "user", parts: [{ text: "Hello" }] }] };
 * strictEqual(await backend.count(request, { contextLength: 1048576 }), 42);
 * ```
 *
 * @module
 */
export {
  GEMINI_DEFAULT_URL,
  GeminiBackend,
  geminiFromConfig,
} from "./gemini_backend.ts";
export type { GeminiBackendOptions } from "./gemini_backend.ts";
export { CountError } from "../../core/errors.ts";
export { ConfigError } from "../../core/config_error.ts";
// The types GeminiBackend's API names, so that this entry stands on its own.
export type * from "../_shared/entry_types.ts";
