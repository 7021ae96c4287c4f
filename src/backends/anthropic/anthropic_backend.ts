// The `anthropic` backend: its class, and how it is built from the configuration.
import { getLogger } from "@logtape/logtape";
import {
  Backend,
  type CapField,
  type CountOptions,
  type JsonObject,
  type OutputFieldOptions,
} from "../../core/backend.ts";
import type { BackendConfig } from "../_shared/config.ts";
import { CountError } from "../../core/errors.ts";
import {
  answerInteger,
  checkHeaderValue,
  payloadJson,
  SMALL_ANSWER_BYTES,
} from "../_shared/http_count.ts";
import { HttpCounter } from "../_shared/http_counter.ts";
import { countGuard } from "../_shared/count_guard.ts";
import {
  type BundledBackend,
  httpOptionsFromConfig,
  requireConfig,
} from "../_shared/from_config.ts";
import { responsesToChat } from "../_shared/responses.ts";
import { toAnthropicCount } from "./convert.ts";
import type { HttpCountOptions } from "../_shared/http_count_options.ts";

const WHAT = "the Anthropic backend";
const LABEL = "Anthropic count_tokens";
const guardedCount = countGuard({
  what: WHAT,
  failure: `${LABEL} count failed`,
  logger: getLogger(["incontext", "anthropic"]),
});

/** The base URL used when none is configured. */
export const ANTHROPIC_DEFAULT_URL = "https://api.anthropic.com";

/** The `anthropic-version` header sent with every count. */
export const ANTHROPIC_VERSION = "2023-06-01";

/** Options for {@linkcode AnthropicBackend}. */
export interface AnthropicBackendOptions extends HttpCountOptions {
  /**
   * The API's base URL; `/v1/messages/count_tokens` is appended (a query string is kept).
   *
   * @default {"https://api.anthropic.com"}
   */
  readonly url?: string;
  /**
   * Sent as the `x-api-key` header, to the count endpoint only.
   *
   * @default {undefined} no `x-api-key` header (for a gateway that adds its own)
   */
  readonly apiKey?: string;
  /**
   * The model counted for requests that name none.
   *
   * @default {undefined} such requests fail their count
   */
  readonly model?: string;
}

/**
 * Counts prompt tokens with Anthropic's count_tokens endpoint, and writes
 * the one output cap the Messages API reads: `max_tokens`, which it
 * requires, so budget() always sets it.
 *
 * OpenAI-style chat requests are converted: system and developer messages
 * join the top-level `system`, tool calls become `tool_use` blocks, tool
 * messages `tool_result` blocks, function tools `{name, description,
 * input_schema}`, and consecutive turns of one role merge. Requests already
 * in the Messages shape count unchanged. Base64 data-URL images convert;
 * what has no faithful Messages form (remote image URLs, audio, unparsable
 * tool arguments, a completion prompt) fails the count with no HTTP call,
 * so budget() estimates. `reasoning_effort` is not mapped to `thinking`.
 *
 * @example Converting an OpenAI request with a tool call
 * ```ts
 * import { AnthropicBackend } from "@incontext/incontext/anthropic";
 * import { createFakeAnthropicHandler } from "@incontext/incontext/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const fake = createFakeAnthropicHandler();
 * const backend = new AnthropicBackend({ apiKey: "sk-ant-example", fetch: fake.fetch, cache: null });
 * await backend.count({
 *   model: "claude-sonnet-4-5",
 *   messages: [
 *     { role: "system", content: "Be brief." },
 *     { role: "user", content: "Weather in Paris?" },
 *     { role: "assistant", content: null, tool_calls: [{ id: "t1", type: "function", function: { name: "weather", arguments: '{"city":"Paris"}' } }] },
 *     { role: "tool", tool_call_id: "t1", content: "Sunny" },
 *   ],
 * }, { contextLength: 200000 });
 * deepStrictEqual(fake.requests[0]?.body, {
 *   model: "claude-sonnet-4-5",
 *   messages: [
 *     { role: "user", content: "Weather in Paris?" },
 *     { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "weather", input: { city: "Paris" } }] },
 *     { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "Sunny" }] },
 *   ],
 *   system: [{ type: "text", text: "Be brief." }],
 * });
 * ```
 */
export class AnthropicBackend extends Backend {
  /** The label of Anthropic counts: `"anthropic-count-tokens"`. */
  override readonly source: string = "anthropic-count-tokens";
  readonly #http: HttpCounter;
  readonly #url: string;
  readonly #model: string | undefined;

  /**
   * Creates an Anthropic backend. Nothing starts until the first count.
   *
   * @param options The base URL, key, default model and the optional settings.
   * @throws {TypeError} If `url` breaks a URL rule, or `apiKey`, `userAgent`
   * or `model` is not a valid non-blank string (the value is never echoed).
   * @throws {RangeError} If `timeoutSeconds` is not a finite number greater than 0.
   */
  constructor(options: AnthropicBackendOptions = {}) {
    super();
    this.#http = new HttpCounter({
      what: WHAT,
      label: LABEL,
      defaultUrl: ANTHROPIC_DEFAULT_URL,
      keyHeader: "x-api-key",
      headers: { "anthropic-version": ANTHROPIC_VERSION },
    }, options);
    this.#url = this.#http.endpoint("/v1/messages/count_tokens");
    this.#model = options.model === undefined
      ? undefined
      : checkHeaderValue(WHAT, "model", options.model);
  }

  /**
   * Counts the prompt tokens of `request` with count_tokens, through the
   * count cache. A 429, 529 or any other error status fails at once: no retries.
   *
   * @param request A chat (OpenAI or Messages shape) or Responses request, never mutated.
   * @param options The context length (part of the cache key), the kind and an abort signal.
   * @returns The `input_tokens` Anthropic reports.
   * @throws {RangeError} If `options.contextLength` is not a positive integer.
   * @throws {CountError} On every counting failure: a request with no
   * Messages form, no model, a network error, a timeout, an abort, an error
   * status, or an invalid answer.
   *
   * @example Failing on an error status
   * ```ts
   * import { CountError } from "@incontext/incontext";
   * import { AnthropicBackend } from "@incontext/incontext/anthropic";
   * import { createFakeAnthropicHandler } from "@incontext/incontext/testing";
   * import { rejects } from "node:assert/strict";
   *
   * const fake = createFakeAnthropicHandler({ fault: "http-529" });
   * const backend = new AnthropicBackend({ apiKey: "sk-ant-example", fetch: fake.fetch, cache: null });
   * const request = { model: "claude-sonnet-4-5", messages: [{ role: "user", content: "Hi" }] };
   * await rejects(backend.count(request, { contextLength: 200000 }), CountError);
   * ```
   */
  override async count(
    request: JsonObject,
    options: CountOptions,
  ): Promise<number> {
    return await guardedCount(
      { source: this.source, request, options },
      (request, contextLength) =>
        this.#http.postCount({
          source: this.source,
          url: this.#url,
          json: payloadJson(this.#payload(request, options.kind ?? "chat")),
          contextLength,
          signal: options.signal,
          maxBytes: SMALL_ANSWER_BYTES,
          read: (answer) =>
            answerInteger(answer, { label: LABEL, field: "input_tokens" }),
        }),
    );
  }

  /**
   * Forgets cached counts: clears the backend's count cache (with the
   * default, the process-wide one).
   *
   * @returns A promise that settles once the clear has taken effect.
   *
   * @example Clearing a private cache
   * ```ts
   * import { AnthropicBackend } from "@incontext/incontext/anthropic";
   * import { createCountCache } from "@incontext/incontext/cache";
   * import { createFakeAnthropicHandler } from "@incontext/incontext/testing";
   * import { strictEqual } from "node:assert/strict";
   *
   * const fake = createFakeAnthropicHandler();
   * await using cache = createCountCache({ inProcess: true });
   * const backend = new AnthropicBackend({ fetch: fake.fetch, cache });
   * const request = { model: "claude-haiku-4-5", messages: [{ role: "user", content: "Hi" }] };
   * await backend.count(request, { contextLength: 200000 });
   * await backend.count(request, { contextLength: 200000 }); // from the cache
   * await backend.clearCache();
   * await backend.count(request, { contextLength: 200000 });
   * strictEqual(fake.requests.length, 2);
   * ```
   */
  override clearCache(): Promise<void> {
    return this.#http.clearCache();
  }

  /**
   * The Messages API reads only `max_tokens`, so every cap becomes it (and
   * the default writeCap removes the OpenAI aliases).
   *
   * @param _field The field incontext would write.
   * @param _options The request's kind.
   * @returns `"max_tokens"`.
   *
   * @example Every alias maps to max_tokens
   * ```ts
   * import { AnthropicBackend } from "@incontext/incontext/anthropic";
   * import { deepStrictEqual, strictEqual } from "node:assert/strict";
   *
   * const backend = new AnthropicBackend();
   * strictEqual(backend.outputBudgetField("max_completion_tokens"), "max_tokens");
   * deepStrictEqual(
   *   backend.writeCap({ messages: [], max_completion_tokens: 9 }, "max_tokens", 5),
   *   { messages: [], max_tokens: 5 },
   * );
   * ```
   */
  override outputBudgetField(
    _field: CapField,
    _options?: OutputFieldOptions,
  ): string {
    return "max_tokens";
  }

  #payload(request: JsonObject, kind: string): JsonObject {
    if (kind === "completion") {
      throw new CountError(
        "Cannot count a completion request with Anthropic as the Messages API has no prompt form",
      );
    }
    const chat = kind === "responses" ? responsesToChat(request) : request;
    return toAnthropicCount(chat, this.#model);
  }
}

/**
 * Builds the `anthropic` backend from configuration: the base URL from
 * `INCONTEXT_TOKENIZER_URL` (default `https://api.anthropic.com`), the key
 * from `INCONTEXT_ANTHROPIC_API_KEY`, the default model from `INCONTEXT_COUNT_MODEL`.
 *
 * @param config The loaded configuration.
 * @returns The backend.
 * @throws {ConfigError} If `INCONTEXT_ANTHROPIC_API_KEY` is missing.
 *
 * @example Building from configuration
 * ```ts
 * import { anthropicFromConfig } from "@incontext/incontext/anthropic";
 * import { loadConfig } from "@incontext/incontext/config";
 * import { strictEqual } from "node:assert/strict";
 *
 * const config = loadConfig({ INCONTEXT_BACKEND: "anthropic", INCONTEXT_ANTHROPIC_API_KEY: "sk-ant-example", INCONTEXT_COUNT_MODEL: "claude-sonnet-4-5" });
 * strictEqual(anthropicFromConfig(config).source, "anthropic-count-tokens");
 * ```
 */
export function anthropicFromConfig(config: BackendConfig): AnthropicBackend {
  const { anthropicApiKey } = requireConfig(ANTHROPIC, config);
  return new AnthropicBackend({
    ...httpOptionsFromConfig(config, anthropicApiKey),
    ...(config.countModel === undefined ? {} : { model: config.countModel }),
  });
}

/** The `anthropic` backend as the bundled registry plugs it in. */
export const ANTHROPIC: BundledBackend<"anthropicApiKey"> = {
  name: "anthropic",
  requires: ["anthropicApiKey"],
  factory: anthropicFromConfig,
};
