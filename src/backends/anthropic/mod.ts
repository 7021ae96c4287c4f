/**
 * Counts prompt tokens with Anthropic's `POST /v1/messages/count_tokens`,
 * converting OpenAI-style chat requests to the Messages shape first.
 *
 * @example Counting a chat request
 * ```ts
 * import { AnthropicBackend } from "@incontext/incontext/anthropic";
 * import { createFakeAnthropicHandler } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const fake = createFakeAnthropicHandler({ countTokens: () => 42 });
 * // Production code keeps the default, process-wide count cache.
 * const backend = new AnthropicBackend({ apiKey: "sk-ant-example", fetch: fake.fetch, cache: null });
 * const request = { model: "claude-sonnet-4-5", messages: [{ role: "user", content: "Hello" }] };
 * strictEqual(await backend.count(request, { contextLength: 200000 }), 42);
 * ```
 *
 * @module
 */
export {
  ANTHROPIC_DEFAULT_URL,
  ANTHROPIC_VERSION,
  AnthropicBackend,
  anthropicFromConfig,
} from "./anthropic_backend.ts";
export type { AnthropicBackendOptions } from "./anthropic_backend.ts";
export { CountError } from "../../core/errors.ts";
export { ConfigError } from "../../core/config_error.ts";
// The types AnthropicBackend's API names, so that this entry stands on its own.
export type * from "../_shared/entry_types.ts";
