// The `openai` backend: its class, and how it is built from the configuration.
import { getLogger } from "@logtape/logtape";
import {
  Backend,
  type CapField,
  type CountOptions,
  type CountResult,
  type JsonObject,
  type OutputFieldOptions,
  type RequestKind,
} from "../../core/backend.ts";
import { CountError } from "../../core/errors.ts";
import { effectiveField, isJsonObject } from "../../core/request.ts";
import {
  answerInteger,
  payloadJson,
  SMALL_ANSWER_BYTES,
} from "../_shared/http_count.ts";
import { HttpCounter } from "../_shared/http_counter.ts";
import { countGuard } from "../_shared/count_guard.ts";
import {
  type BundledBackend,
  httpOptionsFromConfig,
} from "../_shared/from_config.ts";
import {
  encodingForModel,
  estimateChatTokens,
  loadEncoding,
} from "./chat_estimate.ts";
import type { BackendConfig } from "../_shared/config.ts";
import type { HttpCountOptions } from "../_shared/http_count_options.ts";

const WHAT = "the OpenAI backend";
const LABEL = "OpenAI /v1/responses/input_tokens";
const ESTIMATE_LABEL = "OpenAI chat estimate";
const guardedCount = countGuard({
  what: WHAT,
  failure: "The OpenAI count failed",
  logger: getLogger(["incontext", "openai"]),
});
/** The default base URL. */
const OPENAI_URL = "https://api.openai.com";

/**
 * The fields `/v1/responses/input_tokens` accepts: it answers 400 to any
 * other (`max_output_tokens`, `stream`, `temperature`, ...).
 */
const INPUT_TOKENS_FIELDS: ReadonlySet<string> = new Set([
  "model",
  "input",
  "instructions",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "previous_response_id",
  "conversation",
  "reasoning",
  "text",
  "truncation",
]);

/** Options for {@linkcode OpenAIBackend}. */
export interface OpenAIBackendOptions extends HttpCountOptions {
  /**
   * The API's base URL, without `/v1`; `/v1/responses/input_tokens` is
   * appended. A query string is kept.
   *
   * @default {"https://api.openai.com"}
   */
  readonly url?: string;
  /**
   * Sent as `Authorization: Bearer <apiKey>` to the count endpoint only.
   *
   * @default {undefined} no `Authorization` header
   */
  readonly apiKey?: string;
}

/**
 * Counts OpenAI prompts. Responses requests (`kind: "responses"`) are
 * counted exactly by `POST /v1/responses/input_tokens` (source
 * `"openai-input-tokens"`). Chat Completions requests are estimated
 * locally: the text in the model's encoding (`o200k_base` for the GPT-4o,
 * GPT-4.1, GPT-4.5, GPT-5 and o-series families, `cl100k_base` for GPT-4
 * and GPT-3.5) plus OpenAI's per-message overhead, returned as a
 * {@linkcode CountResult} whose source (`"openai-o200k-estimate"` or
 * `"openai-cl100k-estimate"`) says it is an estimate. Other models, media
 * parts and completions fail their count, so budget() falls back.
 *
 * Caps are written as OpenAI reads them: `max_completion_tokens` for Chat
 * Completions (o-series models reject `max_tokens`), `max_output_tokens`
 * for Responses. The context length comes from configuration.
 *
 * @example Estimating a chat request
 * ```ts
 * import { OpenAIBackend } from "@incontext/incontext/openai";
 * import { ok, strictEqual } from "node:assert/strict";
 *
 * const backend = new OpenAIBackend({ cache: null });
 * const request = { model: "gpt-4o", messages: [{ role: "user", content: "Hello" }] };
 * const counted = await backend.count(request, { contextLength: 128000 });
 * ok(typeof counted === "object" && counted.tokens === counted.estimatedTokens);
 * strictEqual(counted.source, "openai-o200k-estimate");
 * strictEqual(backend.outputBudgetField("max_tokens"), "max_completion_tokens");
 * ```
 */
export class OpenAIBackend extends Backend {
  /** The label of exact counts: `"openai-input-tokens"`. */
  override readonly source: string = "openai-input-tokens";
  readonly #http: HttpCounter;

  /**
   * Creates an OpenAI backend. Nothing is sent or loaded until the first count.
   *
   * @param options The base URL, the API key and the optional settings.
   * @throws {TypeError} If `url` breaks a URL rule, or `userAgent` or `apiKey` is not a valid header value.
   * @throws {RangeError} If `timeoutSeconds` is not a finite number greater than 0.
   */
  constructor(options: OpenAIBackendOptions = {}) {
    super();
    this.#http = new HttpCounter(
      { what: WHAT, label: LABEL, defaultUrl: OPENAI_URL },
      options,
    );
  }

  /**
   * Counts the prompt tokens of `request`: exactly for Responses, as an
   * estimate for Chat Completions.
   *
   * @param request The request body, never mutated.
   * @param options The context length (from configuration), the kind, an abort signal.
   * @returns A {@linkcode CountResult}: `estimatedTokens` is 0 for an
   * exact count and all of `tokens` for an estimate.
   * @throws {RangeError} If `options.contextLength` is not a positive integer.
   * @throws {CountError} On every counting failure: an HTTP error (429 and
   * 5xx included, never retried), a network error, a timeout, an abort, an
   * invalid answer, a model without a known encoding, a media part, or a
   * completions request.
   *
   * @example A model without a known encoding falls back
   * ```ts
   * import { CountError } from "@incontext/incontext";
   * import { OpenAIBackend } from "@incontext/incontext/openai";
   * import { rejects } from "node:assert/strict";
   *
   * const backend = new OpenAIBackend({ cache: null });
   * const request = { model: "my-finetune", messages: [] };
   * await rejects(backend.count(request, { contextLength: 8192 }), CountError);
   * ```
   */
  override async count(
    request: JsonObject,
    options: CountOptions,
  ): Promise<CountResult> {
    return await guardedCount(
      { source: this.source, request, options },
      async (request, contextLength) => {
        const kind = options.kind ?? "chat";
        return kind === "responses"
          ? await this.#countResponses(request, contextLength, options.signal)
          : await this.#estimateChat(request, {
            kind,
            contextLength,
            signal: options.signal,
          });
      },
    );
  }

  /**
   * Forgets cached counts: clears the backend's count cache (with the
   * default, the process-wide one).
   *
   * @returns A promise that settles once the clear has taken effect.
   * @throws {CountError} If the cache is disposed.
   *
   * @example Counting again after a clear
   * ```ts
   * import { OpenAIBackend } from "@incontext/incontext/openai";
   * import { createCountCache } from "@incontext/incontext/cache";
   * import { createFakeOpenAIHandler } from "@incontext/incontext/testing";
   * import { strictEqual } from "node:assert/strict";
   *
   * const fake = createFakeOpenAIHandler();
   * await using cache = createCountCache({ inProcess: true });
   * const backend = new OpenAIBackend({ url: "http://fake.test", fetch: fake.fetch, cache });
   * const request = { model: "gpt-4.1", input: "Hi" };
   * const options = { contextLength: 1047576, kind: "responses" } as const;
   * await backend.count(request, options);
   * await backend.count(request, options); // from the cache
   * await backend.clearCache();
   * await backend.count(request, options);
   * strictEqual(fake.requests.length, 2);
   * ```
   */
  override clearCache(): Promise<void> {
    return this.#http.clearCache();
  }

  /**
   * The cap field OpenAI reads for the request's kind, whichever the caller used.
   *
   * @param _field The field incontext would write.
   * @param options The request's kind.
   * @returns `"max_output_tokens"` for Responses, `"max_tokens"` for
   * completions, else `"max_completion_tokens"` (o-series models reject
   * `max_tokens`).
   *
   * @example One field per endpoint
   * ```ts
   * import { OpenAIBackend } from "@incontext/incontext/openai";
   * import { strictEqual } from "node:assert/strict";
   *
   * const backend = new OpenAIBackend();
   * strictEqual(backend.outputBudgetField("max_tokens"), "max_completion_tokens");
   * strictEqual(backend.outputBudgetField("max_tokens", { kind: "responses" }), "max_output_tokens");
   * ```
   */
  override outputBudgetField(
    _field: CapField,
    options: OutputFieldOptions = {},
  ): string {
    switch (options.kind) {
      case "responses":
        return "max_output_tokens";
      case "completion":
        return "max_tokens";
      default:
        return "max_completion_tokens";
    }
  }

  async #countResponses(
    request: JsonObject,
    contextLength: number,
    signal: AbortSignal | undefined,
  ): Promise<CountResult> {
    const tokens = await this.#http.postCount({
      source: this.source,
      url: this.#http.endpoint("/v1/responses/input_tokens"),
      json: payloadJson(inputTokensPayload(request)),
      contextLength,
      signal,
      maxBytes: SMALL_ANSWER_BYTES,
      read: (answer) =>
        answerInteger(answer, { label: LABEL, field: "input_tokens" }),
    });
    return { tokens, estimatedTokens: 0 };
  }

  async #estimateChat(
    request: JsonObject,
    { kind, contextLength, signal }: {
      readonly kind: RequestKind;
      readonly contextLength: number;
      readonly signal?: AbortSignal | undefined;
    },
  ): Promise<CountResult> {
    if (kind !== "chat") {
      throw new CountError(
        "Cannot count a completions request with the OpenAI backend",
      );
    }
    const name = encodingForModel(effectiveField(request, "model"));
    if (name === undefined) {
      throw new CountError(
        "Cannot estimate a chat request as the model has no known OpenAI encoding",
      );
    }
    const source = name === "o200k_base"
      ? "openai-o200k-estimate"
      : "openai-cl100k-estimate";
    const json = payloadJson(chatPayload(request));
    const tokens = await this.#http.count(
      {
        key: source,
        contextLength,
        json,
        signal,
        label: ESTIMATE_LABEL,
      },
      async () => estimateChatTokens(request, await loadEncoding(name)),
    );
    return { tokens, estimatedTokens: tokens, source };
  }
}

/** The request's fields that `/v1/responses/input_tokens` accepts, in the caller's order. */
function inputTokensPayload(request: JsonObject): Record<string, unknown> {
  const extra = isJsonObject(request.extra_body) ? request.extra_body : {};
  const payload: Record<string, unknown> = {};
  for (const level of [request, extra]) {
    for (const [key, value] of Object.entries(level)) {
      if (INPUT_TOKENS_FIELDS.has(key)) payload[key] = value;
    }
  }
  return payload;
}

/** What the chat estimate reads: the cache key's payload. */
function chatPayload(request: JsonObject): Record<string, unknown> {
  const payload: Record<string, unknown> = {};
  for (
    const field of [
      "messages",
      "tools",
      "functions",
      "tool_choice",
      "function_call",
    ]
  ) {
    const value = effectiveField(request, field);
    if (value !== undefined) payload[field] = value;
  }
  return payload;
}

/**
 * Builds the `openai` backend from the configuration: the base URL is
 * `INCONTEXT_TOKENIZER_URL` (default `https://api.openai.com`), the key
 * `INCONTEXT_OPENAI_API_KEY`. Nothing is required: Chat Completions
 * requests are estimated without a key.
 *
 * @param config The loaded configuration.
 * @returns The backend.
 *
 * @example Selecting OpenAI
 * ```ts
 * import { openAIFromConfig } from "@incontext/incontext/openai";
 * import { loadConfig } from "@incontext/incontext/config";
 * import { strictEqual } from "node:assert/strict";
 *
 * const config = loadConfig({ INCONTEXT_TOKENIZER_URL: "https://api.openai.com" });
 * strictEqual(openAIFromConfig(config).source, "openai-input-tokens");
 * ```
 */
export function openAIFromConfig(config: BackendConfig): OpenAIBackend {
  return new OpenAIBackend(httpOptionsFromConfig(config, config.openaiApiKey));
}

/**
 * The `openai` backend as the bundled registry plugs it in. Nothing is
 * required: the base URL defaults to https://api.openai.com, Chat
 * Completions counts are local, and Responses counts without a key fail
 * with 401 and fall back.
 */
export const OPENAI: BundledBackend<never> = {
  name: "openai",
  requires: [],
  factory: openAIFromConfig,
};
