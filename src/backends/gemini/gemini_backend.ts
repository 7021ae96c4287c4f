// The `gemini` backend: its class, and how it is built from the configuration.
import { getLogger } from "@logtape/logtape";
import {
  Backend,
  type CapReading,
  type CountOptions,
  type JsonObject,
  type ReadCapsOptions,
  type RequestKind,
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
import { isJsonObject } from "../../core/request.ts";
import { responsesToChat } from "../_shared/responses.ts";
import {
  geminiCapKeys,
  geminiModelName,
  isGeminiShape,
  toGeminiCount,
} from "./convert.ts";
import type { HttpCountOptions } from "../_shared/http_count_options.ts";

const WHAT = "the Gemini backend";
const LABEL = "Gemini countTokens";
const guardedCount = countGuard({
  what: WHAT,
  failure: `${LABEL} count failed`,
  logger: getLogger(["incontext", "gemini"]),
});

/** The base URL used when none is configured. */
export const GEMINI_DEFAULT_URL = "https://generativelanguage.googleapis.com";

/** Options for {@linkcode GeminiBackend}. */
export interface GeminiBackendOptions extends HttpCountOptions {
  /**
   * The API's base URL; `/v1beta/models/{model}:countTokens` is appended (a query string is kept).
   *
   * @default {"https://generativelanguage.googleapis.com"}
   */
  readonly url?: string;
  /**
   * Sent as the `x-goog-api-key` header (never in the URL), to the count endpoint only.
   *
   * @default {undefined} no key header (for a gateway that adds its own)
   */
  readonly apiKey?: string;
  /**
   * The model counted for requests that name none (Gemini-shaped requests
   * carry the model in the URL, not the body).
   *
   * @default {undefined} such requests fail their count
   */
  readonly model?: string;
}

/**
 * Counts prompt tokens with Gemini's countTokens endpoint. A request in
 * Gemini's shape (`contents`) is a chat request whose output cap is
 * `generationConfig.maxOutputTokens`; an OpenAI-shaped request (for
 * Gemini's OpenAI-compatible endpoint) is converted for counting (system
 * messages to `systemInstruction`, tool calls to `functionCall` parts,
 * tool results to `functionResponse` parts, tools to
 * `functionDeclarations`) and keeps the OpenAI cap fields.
 *
 * What has no faithful Gemini form (remote image URLs, unparsable tool
 * arguments, a tool result answering no call, a completion prompt) fails
 * the count with no HTTP call, so budget() estimates.
 *
 * @example Budgeting a Gemini-shaped request
 * ```ts
 * import { budget } from "@incontext/incontext";
 * import { GeminiBackend } from "@incontext/incontext/gemini";
 * import { createFakeGeminiHandler } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const fake = createFakeGeminiHandler({ countTokens: () => 1000 });
 * const backend = new GeminiBackend({ model: "gemini-2.5-flash", fetch: fake.fetch, cache: null });
 * const request = { contents: [{ role: "user", parts: [{ text: "Hi" }] }], generationConfig: { temperature: 0 } };
 * const result = await budget(request, { window: 100000, contextLength: 1048576, backend });
 * strictEqual(result.field, "generationConfig.maxOutputTokens");
 * strictEqual((result.request.generationConfig as { maxOutputTokens: number }).maxOutputTokens, 99000);
 * ```
 */
export class GeminiBackend extends Backend {
  /** The label of Gemini counts: `"gemini-count-tokens"`. */
  override readonly source: string = "gemini-count-tokens";
  readonly #http: HttpCounter;
  readonly #model: string | undefined;

  /**
   * Creates a Gemini backend. Nothing starts until the first count.
   *
   * @param options The base URL, key, default model and the optional settings.
   * @throws {TypeError} If `url` breaks a URL rule, or `apiKey`, `userAgent`
   * or `model` is not a valid non-blank string (the value is never echoed).
   * @throws {RangeError} If `timeoutSeconds` is not a finite number greater than 0.
   */
  constructor(options: GeminiBackendOptions = {}) {
    super();
    this.#http = new HttpCounter({
      what: WHAT,
      label: LABEL,
      defaultUrl: GEMINI_DEFAULT_URL,
      keyHeader: "x-goog-api-key",
    }, options);
    this.#model = options.model === undefined
      ? undefined
      : checkHeaderValue(WHAT, "model", options.model);
  }

  /**
   * Counts the prompt tokens of `request` with countTokens, through the
   * count cache. A 429, 503 or any other error status fails at once: no retries.
   *
   * @param request A Gemini-shaped, OpenAI chat or Responses request, never mutated.
   * @param options The context length (part of the cache key), the kind and an abort signal.
   * @returns The `totalTokens` Gemini reports.
   * @throws {RangeError} If `options.contextLength` is not a positive integer.
   * @throws {CountError} On every counting failure: a request with no
   * Gemini form, no model or a model name that is not one path segment, a
   * network error, a timeout, an abort, an error status, or an invalid answer.
   *
   * @example Converting an OpenAI-shaped request
   * ```ts
   * import { GeminiBackend } from "@incontext/incontext/gemini";
   * import { createFakeGeminiHandler } from "@incontext/incontext/testing";
   * import { deepStrictEqual, strictEqual } from "node:assert/strict";
   *
   * const fake = createFakeGeminiHandler();
   * const backend = new GeminiBackend({ fetch: fake.fetch, cache: null });
   * const request = { model: "gemini-2.5-flash", messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }] };
   * await backend.count(request, { contextLength: 1048576 });
   * strictEqual(fake.requests[0]?.path, "/v1beta/models/gemini-2.5-flash:countTokens");
   * deepStrictEqual(fake.requests[0]?.body, {
   *   generateContentRequest: {
   *     model: "models/gemini-2.5-flash",
   *     contents: [{ role: "user", parts: [{ text: "Hi" }] }],
   *     systemInstruction: { parts: [{ text: "Be brief." }] },
   *   },
   * });
   * ```
   */
  override async count(
    request: JsonObject,
    options: CountOptions,
  ): Promise<number> {
    return await guardedCount(
      { source: this.source, request, options },
      (request, contextLength) => {
        const { url, json } = this.#post(request, options.kind ?? "chat");
        return this.#http.postCount({
          source: this.source,
          url,
          json,
          contextLength,
          signal: options.signal,
          maxBytes: SMALL_ANSWER_BYTES,
          read: (answer) =>
            answerInteger(answer, { label: LABEL, field: "totalTokens" }),
        });
      },
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
   * import { GeminiBackend } from "@incontext/incontext/gemini";
   * import { createCountCache } from "@incontext/incontext/cache";
   * import { createFakeGeminiHandler } from "@incontext/incontext/testing";
   * import { strictEqual } from "node:assert/strict";
   *
   * const fake = createFakeGeminiHandler();
   * await using cache = createCountCache({ inProcess: true });
   * const backend = new GeminiBackend({ model: "gemini-2.5-flash", fetch: fake.fetch, cache });
   * const request = { contents: [{ role: "user", parts: [{ text: "Hi" }] }] };
   * await backend.count(request, { contextLength: 1048576 });
   * await backend.count(request, { contextLength: 1048576 }); // from the cache
   * await backend.clearCache();
   * await backend.count(request, { contextLength: 1048576 });
   * strictEqual(fake.requests.length, 2);
   * ```
   */
  override clearCache(): Promise<void> {
    return this.#http.clearCache();
  }

  /**
   * Reads a `contents` array as a chat request; other shapes as the default does.
   *
   * @param request The request body.
   * @returns `"chat"` for Gemini's shape, else the OpenAI kinds.
   *
   * @example Gemini's shape is chat
   * ```ts
   * import { GeminiBackend } from "@incontext/incontext/gemini";
   * import { strictEqual } from "node:assert/strict";
   *
   * const backend = new GeminiBackend();
   * strictEqual(backend.requestKind({ contents: [] }), "chat");
   * strictEqual(backend.requestKind({ prompt: "Once" }), "completion");
   * ```
   */
  override requestKind(request: JsonObject): RequestKind | undefined {
    return isJsonObject(request) && isGeminiShape(request)
      ? "chat"
      : super.requestKind(request);
  }

  /**
   * Reads `generationConfig.maxOutputTokens` of a Gemini-shaped request
   * (`generation_config.max_output_tokens` when the request is snake_cased);
   * the OpenAI cap fields otherwise.
   *
   * @param request The request body.
   * @param options The request's kind and the OpenAI field to use without a cap.
   * @returns The cap and the dotted field budget() writes.
   *
   * @example The nested cap
   * ```ts
   * import { GeminiBackend } from "@incontext/incontext/gemini";
   * import { deepStrictEqual } from "node:assert/strict";
   *
   * const backend = new GeminiBackend();
   * const request = { contents: [], generationConfig: { maxOutputTokens: 800 } };
   * deepStrictEqual(
   *   backend.readCaps(request, { kind: "chat", defaultField: "max_tokens" }),
   *   { value: 800, field: "generationConfig.maxOutputTokens" },
   * );
   * ```
   */
  override readCaps(request: JsonObject, options: ReadCapsOptions): CapReading {
    if (!isGeminiShape(request)) return super.readCaps(request, options);
    const { config, cap } = geminiCapKeys(request);
    const settings = request[config];
    const field = `${config}.${cap}`;
    const sent = isJsonObject(settings) ? settings[cap] : undefined;
    const value = sent == null ? undefined : this.coerceOutputBudget(sent);
    // A cap Gemini refuses goes on as written, for Gemini to answer.
    return sent != null && value === undefined
      ? { value, field, invalid: field }
      : { value, field };
  }

  /**
   * Writes a dotted field (`generationConfig.maxOutputTokens`) into a copy of
   * its parent object; other fields as the default does.
   *
   * @param request The request body, never changed.
   * @param field The wire field from {@linkcode GeminiBackend.readCaps}.
   * @param value The cap.
   * @returns The rewritten copy.
   *
   * @example Writing the nested cap
   * ```ts
   * import { GeminiBackend } from "@incontext/incontext/gemini";
   * import { deepStrictEqual } from "node:assert/strict";
   *
   * const backend = new GeminiBackend();
   * const request = { contents: [], generationConfig: { temperature: 0 } };
   * deepStrictEqual(
   *   backend.writeCap(request, "generationConfig.maxOutputTokens", 512),
   *   { contents: [], generationConfig: { temperature: 0, maxOutputTokens: 512 } },
   * );
   * deepStrictEqual(request.generationConfig, { temperature: 0 });
   * ```
   */
  override writeCap(
    request: JsonObject,
    field: string,
    value: number,
  ): JsonObject {
    const dot = field.indexOf(".");
    if (dot < 0) return super.writeCap(request, field, value);
    const outer = field.slice(0, dot);
    const parent = request[outer];
    return {
      ...request,
      [outer]: {
        ...(isJsonObject(parent) ? parent : {}),
        [field.slice(dot + 1)]: value,
      },
    };
  }

  #post(request: JsonObject, kind: RequestKind): { url: string; json: string } {
    if (kind === "completion") {
      throw new CountError(
        "Cannot count a completion request with Gemini as it has no prompt form",
      );
    }
    const chat = kind === "responses" ? responsesToChat(request) : request;
    const model = geminiModelName(chat, this.#model);
    const url = this.#http.endpoint(
      `/v1beta/models/${encodeURIComponent(model)}:countTokens`,
    );
    return { url, json: payloadJson(toGeminiCount(chat, model)) };
  }
}

/**
 * Builds the `gemini` backend from configuration: the base URL from
 * `INCONTEXT_TOKENIZER_URL` (default
 * `https://generativelanguage.googleapis.com`), the key from
 * `INCONTEXT_GEMINI_API_KEY`, the default model from `INCONTEXT_COUNT_MODEL`.
 *
 * @param config The loaded configuration.
 * @returns The backend.
 * @throws {ConfigError} If `INCONTEXT_GEMINI_API_KEY` is missing.
 *
 * @example Building from configuration
 * ```ts
 * import { geminiFromConfig } from "@incontext/incontext/gemini";
 * import { loadConfig } from "@incontext/incontext/config";
 * import { strictEqual } from "node:assert/strict";
 *
 * const config = loadConfig({ INCONTEXT_BACKEND: "gemini", INCONTEXT_GEMINI_API_KEY: "AIza-example", INCONTEXT_COUNT_MODEL: "gemini-2.5-flash" });
 * strictEqual(geminiFromConfig(config).source, "gemini-count-tokens");
 * ```
 */
export function geminiFromConfig(config: BackendConfig): GeminiBackend {
  const { geminiApiKey } = requireConfig(GEMINI, config);
  return new GeminiBackend({
    ...httpOptionsFromConfig(config, geminiApiKey),
    ...(config.countModel === undefined ? {} : { model: config.countModel }),
  });
}

/** The `gemini` backend as the bundled registry plugs it in. */
export const GEMINI: BundledBackend<"geminiApiKey"> = {
  name: "gemini",
  requires: ["geminiApiKey"],
  factory: geminiFromConfig,
};
