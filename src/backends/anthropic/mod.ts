/**
 * Counts prompt tokens with Anthropic's `POST /v1/messages/count_tokens`,
 * converting OpenAI-style chat requests to the Messages shape first.
 *
 * The `Backend` contract it implements and the errors its counts throw
 * (`CountError`) are the root entry's, `@incontext/incontext`;
 * `BackendConfig`, which its factory reads, and `ConfigError`, which it
 * throws for a missing setting, are `@incontext/incontext/config`'s.
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
// The options it shares with the other HTTP backends, which its options extend.
export type { HttpCountOptions } from "../_shared/http_count_options.ts";
