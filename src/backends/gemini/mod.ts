/**
 * Counts prompt tokens with Gemini's `POST models/{model}:countTokens`,
 * sending a `generateContentRequest` so that the system instruction and the
 * tools count too.
 *
 * The `Backend` contract it implements and the errors its counts throw
 * (`CountError`) are the root entry's, `@incontext/incontext`;
 * `BackendConfig`, which its factory reads, and `ConfigError`, which it
 * throws for a missing setting, are `@incontext/incontext/config`'s.
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
// The options it shares with the other HTTP backends, which its options extend.
export type { HttpCountOptions } from "../_shared/http_count_options.ts";
