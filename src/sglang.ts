/**
 * Counts prompt tokens exactly with an SGLang server's `POST /tokenize`.
 * SGLang tokenizes text only, so chat requests are first rendered with the
 * model folder's chat template, as the local backend renders them.
 *
 * @example Counting a chat request
 * ```ts
 * import { SglangBackend } from "@incontext/incontext/sglang";
 * import { createFakeSglangHandler } from "@incontext/incontext/testing";
 * import { ok } from "node:assert/strict";
 *
 * const dir = new URL("../tests/fixtures/model_folder/", import.meta.url).pathname;
 * const fake = createFakeSglangHandler();
 * const backend = new SglangBackend({ url: "http://fake.test", dir, fetch: fake.fetch, cache: null });
 * const request = { messages: [{ role: "user", content: "Hello" }] };
 * ok(await backend.count(request, { contextLength: 8192 }) > 0);
 * await backend[Symbol.asyncDispose]();
 * ```
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import {
  Backend,
  type CapField,
  type CountOptions,
  type JsonObject,
  type OutputFieldOptions,
  type OutputLimitOptions,
  type RequestKind,
} from "./backend.ts";
import { type CountCache, sharedCountCache } from "./count_cache.ts";
import { CountError } from "./errors.ts";
import { ConfigError, type ConfigIssue } from "./config_error.ts";
import type { Config } from "./config.ts";
import { errorType, safeCause } from "./_error_type.ts";
import { effectiveField, isJsonObject } from "./_request.ts";
import type { Deadline } from "./_deadline.ts";
import { laxPositiveInteger } from "./_vllm_caps.ts";
import { maxTokenizeResponseBytes, vllmOutputField } from "./_vllm_payload.ts";
import {
  answerInteger,
  cachedCount,
  checkBaseUrl,
  checkContextLength,
  checkHeaderValue,
  checkTimeout,
  countWithin,
  endpointUrl,
  fetchJson,
  jsonHeaders,
  payloadJson,
} from "./_http_count.ts";
import {
  type Loaded,
  loadFolder,
  renderChat,
  templateFor,
  tokenizePayload,
} from "./_chat_render.ts";

// The types SglangBackend's API names, so that this entry stands on its own.
export type {
  Backend,
  CapField,
  CapReading,
  CountOptions,
  CountResult,
  JsonObject,
  OutputFieldOptions,
  OutputLimitOptions,
  ReadCapsOptions,
  RequestKind,
} from "./backend.ts";
export type { Config } from "./config.ts";
export type {
  CountCache,
  CountCacheKind,
  CountCacheStats,
} from "./count_cache.ts";
export { CountError, TemplateRejectedError } from "./errors.ts";

const logger = getLogger(["incontext", "sglang"]);

const WHAT = "the SGLang backend";
const LABEL = "SGLang /tokenize";

/** Options for {@linkcode SglangBackend}. */
export interface SglangBackendOptions {
  /** The server's base URL, such as `http://127.0.0.1:30000`; `/tokenize` is appended, a query string kept. */
  readonly url: string;
  /** The model folder the server serves: its chat template renders chat requests. */
  readonly dir: string;
  /**
   * A chat template overriding the folder's, as the server's
   * `--chat-template`: a file path, or the template text itself when it
   * contains `{%` or `{{`.
   *
   * @default {undefined} `chat_template.jinja`, else `tokenizer_config.json`'s `chat_template`
   */
  readonly chatTemplate?: string;
  /**
   * The expected SHA-256 of `tokenizer.json`, 64 hex characters; on a
   * mismatch every chat count fails.
   *
   * @default {undefined} not checked
   */
  readonly expectedSha256?: string;
  /**
   * The clock the template's `strftime_now` reads.
   *
   * @default {() => new Date()}
   */
  readonly now?: () => Date;
  /**
   * Sent as `Authorization: Bearer <apiKey>` (SGLang's `--api-key`).
   *
   * @default {undefined} no `Authorization` header
   */
  readonly apiKey?: string;
  /**
   * How long one count may take, in seconds (the first count's file load
   * included); finite and greater than 0.
   *
   * @default {30}
   */
  readonly timeoutSeconds?: number;
  /**
   * The `User-Agent` header.
   *
   * @default {`incontext/${VERSION}`}
   */
  readonly userAgent?: string;
  /**
   * The fetch implementation, for tests or a custom HTTP client.
   *
   * @default {globalThis.fetch}
   */
  readonly fetch?: typeof globalThis.fetch;
  /**
   * Where counts are cached; `null` disables caching.
   *
   * @default {sharedCountCache()} resolved at each count
   */
  readonly cache?: CountCache | null;
}

/** {@linkcode OutputLimitOptions} with the counted prompt, when the caller knows it. */
export interface SglangOutputLimitOptions extends OutputLimitOptions {
  /**
   * The prompt's tokens.
   *
   * @default {0} (the limit is then only the context length minus 1)
   */
  readonly promptTokens?: number;
}

/**
 * Counts the exact prompt tokens of a request with SGLang's `POST
 * /tokenize`. A chat (or Responses) request is rendered locally with the
 * model folder's chat template, after the same preprocessing as the local
 * backend, and the text is sent with `add_special_tokens: false` (the
 * render already holds BOS); a completion's `prompt` is sent with
 * `add_special_tokens: true`. SGLang's `max_model_len` is the tokenizer's,
 * not the server's, so it is ignored: the context length comes from
 * configuration. SGLang accepts prompt + `max_tokens` <= context - 1.
 *
 * A request the template rejects fails with `TemplateRejectedError`;
 * requests the template cannot mirror, media parts and every server fault
 * fail with a `CountError`, so that budget() falls back.
 *
 * @example Reading caps as SGLang does
 * ```ts
 * import { SglangBackend } from "@incontext/incontext/sglang";
 * import { strictEqual } from "node:assert/strict";
 *
 * const backend = new SglangBackend({ url: "http://127.0.0.1:30000", dir: "/models/qwen3" });
 * strictEqual(backend.outputBudgetField("max_output_tokens"), "max_tokens");
 * strictEqual(backend.coerceOutputBudget("512"), 512);
 * strictEqual(backend.outputBudgetLimit({}, { contextLength: 8192, promptTokens: 100 }), 8091);
 * ```
 */
export class SglangBackend extends Backend implements AsyncDisposable {
  /** The label of SGLang counts: `"sglang-tokenize"`. */
  override readonly source: string = "sglang-tokenize";
  readonly #url: string;
  readonly #folder: SglangBackendOptions;
  readonly #timeoutMs: number;
  readonly #headers: Readonly<Record<string, string>>;
  readonly #fetch: typeof globalThis.fetch | undefined;
  readonly #cache: CountCache | null | undefined;
  #loading: Promise<Loaded> | undefined;
  #disposed = false;

  /**
   * Creates an SGLang backend. Nothing is read or sent until the first count.
   *
   * @param options The base URL, the model folder and the optional settings.
   * @throws {TypeError} If `url` breaks a URL rule, `dir` is not a non-empty
   * string, `expectedSha256` is not 64 hex characters, or `userAgent` or
   * `apiKey` is not a valid header value.
   * @throws {RangeError} If `timeoutSeconds` is not a finite number greater than 0.
   */
  constructor(options: SglangBackendOptions) {
    super();
    this.#url = checkBaseUrl(WHAT, options?.url);
    if (typeof options.dir !== "string" || options.dir === "") {
      throw new TypeError(
        "Cannot create the SGLang backend as 'dir' must be a non-empty string",
      );
    }
    const sha = options.expectedSha256;
    if (sha !== undefined && !/^[0-9a-fA-F]{64}$/.test(sha)) {
      throw new TypeError(
        "Cannot create the SGLang backend as 'expectedSha256' must be 64 hex characters",
      );
    }
    const { apiKey, timeoutSeconds = 30, userAgent } = options;
    this.#timeoutMs = checkTimeout(WHAT, timeoutSeconds);
    this.#headers = jsonHeaders(WHAT, userAgent, {
      Authorization: {
        option: "apiKey",
        value: apiKey === undefined
          ? undefined
          : `Bearer ${checkHeaderValue(WHAT, "apiKey", apiKey)}`,
      },
    });
    this.#folder = { ...options };
    this.#fetch = options.fetch;
    this.#cache = options.cache;
  }

  /**
   * Counts the prompt tokens of `request` with `/tokenize`, through the
   * count cache.
   *
   * @param request The request body, never mutated.
   * @param options The context length (from configuration; the server's
   * `max_model_len` is not compared), the kind, an abort signal.
   * @returns The exact prompt token count.
   * @throws {RangeError} If `options.contextLength` is not a positive integer.
   * @throws {TemplateRejectedError} If the chat template rejects the request.
   * @throws {CountError} On any other failure: an HTTP error (429 and 5xx
   * included, never retried), a network error, a timeout, an abort, an
   * invalid answer, a request the template cannot mirror, or a file that
   * does not load.
   *
   * @example A server fault fails the count
   * ```ts
   * import { CountError, SglangBackend } from "@incontext/incontext/sglang";
   * import { createFakeSglangHandler } from "@incontext/incontext/testing";
   * import { rejects } from "node:assert/strict";
   *
   * const dir = new URL("../tests/fixtures/model_folder/", import.meta.url).pathname;
   * const fake = createFakeSglangHandler({ fault: "http-500" });
   * const backend = new SglangBackend({ url: "http://fake.test", dir, fetch: fake.fetch, cache: null });
   * await rejects(backend.count({ prompt: "Once" }, { contextLength: 8192, kind: "completion" }), CountError);
   * await backend[Symbol.asyncDispose]();
   * ```
   */
  override async count(
    request: JsonObject,
    options: CountOptions,
  ): Promise<number> {
    const contextLength = checkContextLength(WHAT, options?.contextLength);
    try {
      if (!isJsonObject(request)) {
        throw new CountError(
          "Cannot count the request as it is not a JSON object",
        );
      }
      const kind = options.kind ?? "chat";
      const count = await countWithin(
        { label: LABEL, timeoutMs: this.#timeoutMs, signal: options.signal },
        (deadline) => this.#count(request, kind, contextLength, deadline),
      );
      logger.debug("Counted {count} prompt tokens with {source}", {
        count,
        source: this.source,
      });
      return count;
    } catch (error) {
      const failure = error instanceof CountError
        ? error
        : new CountError(`The SGLang count failed: ${errorType(error)}`, {
          cause: safeCause(error),
        });
      logger.debug("The {source} count failed: {errorType} ({causeType})", {
        source: this.source,
        errorType: failure.name,
        causeType: errorType(failure.cause),
      });
      throw failure;
    }
  }

  /**
   * Forgets cached counts: clears the backend's count cache.
   *
   * @returns A promise that settles once the clear has taken effect.
   */
  override clearCache(): Promise<void> {
    return this.#resolveCache()?.clear() ?? Promise.resolve();
  }

  /**
   * Maps a cap field to the one SGLang reads: Responses read
   * `max_output_tokens`; chat and completions ignore it, so it becomes
   * `max_tokens`.
   *
   * @param field The field incontext would write.
   * @param options The request's kind.
   * @returns The field to write on the wire.
   */
  override outputBudgetField(
    field: CapField,
    options: OutputFieldOptions = {},
  ): string {
    return vllmOutputField(field, options.kind);
  }

  /**
   * Reads a cap value as SGLang's request validation (pydantic, lax mode) does.
   *
   * @param value A cap field's value.
   * @returns The cap as a positive safe integer, or `undefined`.
   */
  override coerceOutputBudget(value: unknown): number | undefined {
    return laxPositiveInteger(value);
  }

  /**
   * SGLang accepts prompt + `max_tokens` <= context - 1: the largest cap is
   * the context length minus 1 minus the prompt.
   *
   * @param _request The request body.
   * @param options The context length and, when known, the prompt's tokens.
   * @returns `contextLength - 1 - promptTokens`, never below 0.
   */
  override outputBudgetLimit(
    _request: JsonObject,
    options: SglangOutputLimitOptions,
  ): number {
    return Math.max(0, options.contextLength - 1 - (options.promptTokens ?? 0));
  }

  /**
   * Frees the loaded tokenizer and templates; later counts fail.
   *
   * @returns A promise that settles at once.
   */
  [Symbol.asyncDispose](): Promise<void> {
    this.#disposed = true;
    this.#loading = undefined;
    return Promise.resolve();
  }

  #resolveCache(): CountCache | null {
    return this.#cache === undefined ? sharedCountCache() : this.#cache;
  }

  async #count(
    request: JsonObject,
    kind: RequestKind,
    contextLength: number,
    deadline: Deadline,
  ): Promise<number> {
    const post = (body: string) => this.#post(body, contextLength, deadline);
    if (kind === "completion") {
      const prompt = effectiveField(request, "prompt");
      if (typeof prompt !== "string") {
        throw new CountError(
          "Cannot count a completion without a prompt string",
        );
      }
      const body = payloadJson({ prompt, add_special_tokens: true });
      return await cachedCount(
        this.#resolveCache(),
        `${this.source} ${this.#url}`,
        contextLength,
        body,
        deadline,
        () => post(body),
      );
    }
    const payload = tokenizePayload(request, kind);
    const json = payloadJson(payload);
    const loaded = await this.#load();
    deadline.signal.throwIfAborted();
    // The key holds the files' identity: another template renders another prompt.
    return await cachedCount(
      this.#resolveCache(),
      `${this.source} ${this.#url} ${loaded.identity}`,
      contextLength,
      json,
      deadline,
      async () => {
        const text = renderChat(
          loaded,
          payload,
          templateFor(loaded, payload.tools),
        );
        return await post(
          payloadJson({ prompt: text, add_special_tokens: false }),
        );
      },
    );
  }

  async #post(
    body: string,
    contextLength: number,
    deadline: Deadline,
  ): Promise<number> {
    const answer = await fetchJson({
      label: LABEL,
      url: endpointUrl(this.#url, "/tokenize"),
      headers: this.#headers,
      body,
      fetch: this.#fetch,
      signal: deadline.signal,
      maxBytes: maxTokenizeResponseBytes(contextLength),
    });
    return answerInteger(LABEL, answer, "count");
  }

  #load(): Promise<Loaded> {
    if (this.#disposed) {
      return Promise.reject(
        new CountError("Cannot count as the SGLang backend is disposed"),
      );
    }
    this.#loading ??= loadFolder(this.#folder, logger).catch((error) => {
      // A mismatch stays; a read error is retried by the next count.
      if (!(error instanceof CountError)) this.#loading = undefined;
      throw error;
    });
    return this.#loading;
  }
}

/**
 * Builds the `sglang` backend from the configuration: the server's base URL
 * from `INCONTEXT_TOKENIZER_URL` and the model folder from
 * `INCONTEXT_TOKENIZER_DIR`, both required; `INCONTEXT_TOKENIZER_API_KEY`,
 * `INCONTEXT_CHAT_TEMPLATE` and `INCONTEXT_TOKENIZER_SHA256` are optional.
 *
 * @param config The loaded configuration.
 * @returns The backend; nothing is read until the first count.
 * @throws {ConfigError} Listing each of the two required variables that is missing.
 *
 * @example Both variables are required
 * ```ts
 * import { sglangFromConfig } from "@incontext/incontext/sglang";
 * import { ConfigError, loadConfig } from "@incontext/incontext/config";
 * import { strictEqual, throws } from "node:assert/strict";
 *
 * const config = loadConfig({ INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:30000" });
 * throws(() => sglangFromConfig(config), ConfigError);
 * const backend = sglangFromConfig({ ...config, tokenizerDir: "/models/qwen3" });
 * strictEqual(backend.source, "sglang-tokenize");
 * ```
 */
export function sglangFromConfig(config: Config): Backend {
  const issues: ConfigIssue[] = [];
  for (
    const [variable, value] of [
      ["INCONTEXT_TOKENIZER_URL", config.tokenizerUrl],
      ["INCONTEXT_TOKENIZER_DIR", config.tokenizerDir],
    ] as const
  ) {
    if (value === undefined) {
      issues.push({ variable, rule: "is required by the 'sglang' backend" });
    }
  }
  if (issues.length > 0) throw new ConfigError(issues);
  return new SglangBackend({
    url: config.tokenizerUrl!,
    dir: config.tokenizerDir!,
    timeoutSeconds: config.tokenizerTimeoutSeconds,
    userAgent: config.tokenizerUserAgent,
    ...(config.tokenizerApiKey === undefined
      ? {}
      : { apiKey: config.tokenizerApiKey }),
    ...(config.chatTemplate === undefined
      ? {}
      : { chatTemplate: config.chatTemplate }),
    ...(config.tokenizerSha256 === undefined
      ? {}
      : { expectedSha256: config.tokenizerSha256 }),
    cache: sharedCountCache({ maxEntries: config.cacheEntries }),
  });
}
